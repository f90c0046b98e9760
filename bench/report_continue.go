package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ContinuationTokens is the worker continuation figure of the report: the
// tokens of a residual need's worker when it continues the thread of the
// session's earlier worker, against a fresh thread for it. It is read from
// the worker sessions the real codex recorded (frozen/continue, make
// frozen-continue: the product's TestContract_WorkerContinue) against the
// fake model that charges input tokens by the bytes codex sends, one token
// per fakemodel.BytesPerToken (4) bytes, rounded up: the thread's own
// thread/tokenUsage/updated totals, which the product charges to the need
// (its replay test holds the charge to them).
type ContinuationTokens struct {
	// Continued is what the thread's total grew by over the residual
	// need's turn; Fresh is the total of the fresh thread that answered it.
	Continued int64 `json:"continued"`
	Fresh     int64 `json:"fresh"`
	// Source is the frozen directory read, relative to the repository.
	Source string `json:"source"`
}

// continuationDir is frozen/continue next to the corpus/ directory that
// holds the corpus directory dir, as defaultFrozen finds frozen/<name>.
func continuationDir(corpusDir string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(corpusDir))), "frozen", "continue")
}

// continuationTokens reads the figure from dir's continued/ and fresh/
// recordings.
func continuationTokens(dir string) (*ContinuationTokens, error) {
	continued, err := residualTokens(filepath.Join(dir, "continued"))
	if err != nil {
		return nil, err
	}
	fresh, err := residualTokens(filepath.Join(dir, "fresh"))
	if err != nil {
		return nil, err
	}
	return &ContinuationTokens{Continued: continued, Fresh: fresh, Source: filepath.ToSlash(filepath.Join("frozen", "continue"))}, nil
}

// residualTokens is the tokens of the residual need's turn in the
// recordings in dir: the turn whose prompt asks for runtime_flow, charged
// what its thread's total grew by while it ran.
func residualTokens(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		n, found, err := flowTurnTokens(f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if found {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no recorded turn asks for runtime_flow", dir)
}

// flowTurnTokens reads one recorded session: the growth of the thread's
// token total between the start of its runtime_flow turn and the end of
// the session (that turn is the session's last).
func flowTurnTokens(file string) (tokens int64, found bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var total, before int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Dir string `json:"dir"`
			Msg struct {
				Method string `json:"method"`
				Params struct {
					Input []struct {
						Text string `json:"text"`
					} `json:"input"`
					TokenUsage struct {
						Total struct {
							TotalTokens int64 `json:"totalTokens"`
						} `json:"total"`
					} `json:"tokenUsage"`
				} `json:"params"`
			} `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return 0, false, err
		}
		switch m := line.Msg; {
		case line.Dir == "c2s" && m.Method == "turn/start" && len(m.Params.Input) > 0 &&
			strings.Contains(m.Params.Input[0].Text, "Propose runtime_flow evidence"):
			if found {
				return 0, false, errors.New("two runtime_flow turns")
			}
			found, before = true, total
		case line.Dir == "s2c" && m.Method == "thread/tokenUsage/updated":
			total = m.Params.TokenUsage.Total.TotalTokens
		}
	}
	return total - before, found, sc.Err()
}

// markdownContinuation writes the worker continuation figure.
func markdownContinuation(b *bytes.Buffer, r Report) {
	b.WriteString("## Worker continuation\n\n")
	c := r.Continuation
	if c == nil {
		fmt.Fprintf(b, "Not measured: %s.\n\n", r.ContinuationError)
		return
	}
	fmt.Fprintf(b, "Tokens of a residual need's worker (an extension: the trace of `--crlf` after its location), from the worker\n"+
		"sessions the real codex recorded in `%s/` against the fake model, which charges input by the bytes codex\n"+
		"sends (4 bytes a token): a fresh thread re-reads what the session's first worker read; a continued thread\n"+
		"(`worker.continue on`) resends its history instead.\n\n", c.Source)
	b.WriteString("| residual need's worker | tokens |\n|---|---|\n")
	fmt.Fprintf(b, "| fresh thread | %d |\n| continued thread | %d (%s of fresh) |\n\n", c.Fresh, c.Continued, percentOf64(c.Continued, c.Fresh))
}

// percentOf64 formats a as a percentage of n, or a dash when n is zero.
func percentOf64(a, n int64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(n))
}
