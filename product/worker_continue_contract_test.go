//go:build contract

package product

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// TestContract_WorkerContinue runs the continuation scenarios
// (worker_continue_test.go) with the real codex and a loopback fake model
// that charges input by the size of what codex sends (MeasureInput), and
// checks them as the replay tier does. With NEEDLE_UPDATE=1 (make
// frozen-continue) it freezes the worker sessions into
// frozen/continue/<scenario>/.
func TestContract_WorkerContinue(t *testing.T) {
	bin := contractCodex(t)
	update := os.Getenv("NEEDLE_UPDATE") == "1"
	for _, sc := range continueScenarios {
		t.Run(sc.name, func(t *testing.T) {
			model, err := fakemodel.Start(continueModel(t, sc))
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			home := t.TempDir()
			MustWriteFile(t, filepath.Join(home, "config.toml"), fakemodel.ConfigTOML(model.URL()))
			codex := CodexConfig{Command: []string{bin}, Home: home, Deadline: time.Minute, RecordDir: t.TempDir()}
			if update {
				codex.RecordDir = filepath.Join("..", "frozen", "continue", sc.name)
				if err := os.RemoveAll(codex.RecordDir); err != nil {
					t.Fatal(err)
				}
			}
			run := runContinueScenario(t, sc, codex)
			checkContinueScenario(t, run)
			checkContinueWire(t, sc, run)
			t.Logf("%s: worker run tokens %v", sc.name, run.tokens)
		})
	}
}

// continueModel scripts the worker model of a scenario: it reads flags.go
// and answers the location; for the flow it reads options.go and, in a
// thread of its own (not continued), flags.go again first.
func continueModel(t *testing.T, sc continueScenario) fakemodel.Script {
	read := func(path string) fakemodel.Response {
		args, _ := json.Marshal(map[string]any{"cmd": "cat -n " + path, "yield_time_ms": 1000})
		r := fakemodel.FunctionCall("", "", "exec_command", string(args), fakemodel.Usage{Output: 40})
		r.MeasureInput = true
		return r
	}
	answer := func(text string) fakemodel.Response {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(text)); err != nil {
			t.Fatal(err)
		}
		r := fakemodel.Message("", "", b.String(), fakemodel.Usage{Output: 120})
		r.MeasureInput = true
		return r
	}
	s := fakemodel.Script{Responses: []fakemodel.Response{read("flags.go"), answer(locCRLF)}}
	if !sc.keep || sc.move {
		s.Responses = append(s.Responses, read("flags.go"))
	}
	s.Responses = append(s.Responses, read("options.go"), answer(flowCRLF))
	return s
}
