package product

import (
	"fmt"
	"io"
	"strings"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/progress"
)

// needle change start and run: a lifecycle frozen, then driven with
// progress until it waits for approval or ends.

const usageChangeStart = `Usage: needle change start [--repository DIR] [--data-dir DIR] --task TEXT --criterion TEXT... --scope PATH...
                          --test-plan ARTIFACT_ID... [flags]

Start a lifecycle: freeze the change id, the source snapshot, the role
profile's explorer, implementer, test-runner, reviewer and verifier
revisions, the certified test plans, the budget and concurrency one. Nothing
runs until 'needle change run'. Prints the lifecycle (show's form); when no
worker is configured (codex.command) a note on stderr says that the run will
need one.

Flags:
  --task TEXT            what to change
  --criterion TEXT       an acceptance criterion (1-8; repeat)
  --scope PATH           a path the patch may write: a file, or DIR/ for every
                         file below DIR ("." for the whole repository); repeat
  --test-plan ID         a certified focused_tests artifact: each of its tests
                         becomes a frozen test plan Needle runs (repeat; at
                         least one)
  --artifact ID          certified evidence for the workers' context (repeat)
  --claim ID             a certified claim for the workers' context (repeat)
  --need FILE            a need_context request explore resolves (repeat, <= 4)
  --max-files N, --max-bytes N, --note TEXT   the patch's constraints
  --budget-tokens N      the cumulative token budget (default 2000000)
  --budget-wall DURATION the cumulative wall-time budget (default 30m)
  --budget-runs N        the cumulative worker runs (default 16)
  --role-profile ID      the role profile (default "default")
  --json                 print JSON

Exit status: 0 started, 2 invalid input (nothing is stored), 1 failure.
`

func (c *cli) changeStart(args []string) int {
	f := c.changeFlags("start")
	task := f.fs.String("task", "", "")
	var criteria, scopes, plans, artifacts, claims, needs, notes stringList
	f.fs.Var(&criteria, "criterion", "")
	f.fs.Var(&scopes, "scope", "")
	f.fs.Var(&plans, "test-plan", "")
	f.fs.Var(&artifacts, "artifact", "")
	f.fs.Var(&claims, "claim", "")
	f.fs.Var(&needs, "need", "")
	f.fs.Var(&notes, "note", "")
	maxFiles, maxBytes := f.fs.Int("max-files", 0, ""), f.fs.Int("max-bytes", 0, "")
	tokens, runs := f.fs.Int64("budget-tokens", 0, ""), f.fs.Int("budget-runs", 0, "")
	wall := f.fs.Duration("budget-wall", 0, "")
	profile := f.fs.String("role-profile", "", "")
	if code, ok := c.parseChange(f, "start", usageChangeStart, args, 0); !ok {
		return code
	}
	st := LifecycleStart{Request: changeRequest{Task: *task, Criteria: criteria, ArtifactIDs: artifacts, ClaimIDs: claims,
		Constraints: changeConstraints{MaxFiles: *maxFiles, MaxBytes: *maxBytes, Notes: notes}},
		TestPlans: plans, Profile: *profile,
		Budget: lifecycle.Budget{Tokens: *tokens, WallMs: wall.Milliseconds(), WorkerRuns: *runs}}
	if *tokens < 0 || *runs < 0 || *wall < 0 {
		return c.failChange("change start", invalidf(opLifecycle, "budget", "a budget is positive"))
	}
	st.Request.Scopes = changeStartScopes(scopes)
	for i, name := range needs {
		data, err := c.readInput(name, maxRequestBytes)
		if err != nil {
			return c.failChange("change start", err)
		}
		req, err := DecodeNeedRequest(data)
		if err != nil {
			return c.failChange("change start", invalidf(opLifecycle, fmt.Sprintf("needs[%d]", i), "%s: %v", name, err))
		}
		st.Needs = append(st.Needs, req)
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change start", err)
	}
	defer eng.Close()
	d, err := eng.StartLifecycle(c.ctx, st)
	if err != nil {
		return c.failChange("change start", err)
	}
	c.noteNoWorker(*f.dataDir)
	if *f.json {
		return c.writeJSON(d)
	}
	c.showDetail(f, d)
	return 0
}

// noteNoWorker tells on stderr that 'needle change run' will need a
// worker when the data directory configures none (codex.command): start
// itself runs nothing, and a run may still name one with --codex.
func (c *cli) noteNoWorker(dataDir string) {
	settings, err := c.settings(dataDir)
	if err != nil || strings.TrimSpace(settings["codex.command"]) != "" {
		return
	}
	fmt.Fprintf(c.stderr, "needle change start: note: no worker is configured; 'needle change run' needs --codex CMD, "+
		"or set one with: needle config set --data-dir %s codex.command CMD\n", dataDir)
}

// changeStartScopes reads each --scope: a path ending in "/", or ".", is
// a subtree; any other path is exact.
func changeStartScopes(scopes []string) []pathScope {
	var out []pathScope
	for _, s := range scopes {
		scope := pathScope{Path: s, Kind: scopeExact}
		if s == "." || strings.HasSuffix(s, "/") {
			scope = pathScope{Path: strings.TrimSuffix(s, "/"), Kind: scopeSubtree}
			if scope.Path == "" {
				scope.Path = "."
			}
		}
		out = append(out, scope)
	}
	return out
}

const usageChangeRun = `Usage: needle change run [--repository DIR] [--data-dir DIR] [--codex CMD] [--json] ID

Run a lifecycle: replay its journal, run the one pending phase's worker
(explore, implement, review and verify are Codex App Server workers; test is
Needle running the frozen test plans in its sandbox), store what it produced,
commit the transition, and go on until the lifecycle awaits approval or ends.
A run that is interrupted or killed loses nothing: the next run takes up
where the journal says, and no committed phase runs again. Each phase prints
a line on stderr when its worker starts and one when it is committed; when
stderr is no terminal (a log), a line every 10 s also tells the phase still
running.

Flags:
  --codex CMD   the App Server command (overrides the codex.command setting)
  --json        print the lifecycle as JSON at the end

A lifecycle still running needs a worker, and one before its test phase the
test sandbox's codex (tests.codex, the codex of codex.command, or codex on
PATH): without them the run is refused (exit 2) before anything is run,
charged or recorded. 'needle doctor' checks both.

Exit status: 0 awaiting approval (or applied), 1 the lifecycle ended without
a verified patch or a failure, 2 invalid input, or no worker or sandbox, 3 a
conflict: another runner holds the lifecycle or moved it on, or the work tree
moved under it.
`

func (c *cli) changeRun(args []string) int {
	f := c.changeFlags("run")
	codex := f.fs.String("codex", "", "")
	if code, ok := c.parseChange(f, "run", usageChangeRun, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, *codex, true)
	if err != nil {
		return c.failChange("change run", err)
	}
	defer eng.Close()
	report := func(p LifecycleProgress) { writeProgress(c.stderr, p) }
	if !c.terminal && !isTerminal(c.stderr) {
		r := progress.New(c.stderr, "needle change run: ") // no terminal: plain lines
		defer r.Close()
		report = func(p LifecycleProgress) {
			var b strings.Builder
			writeProgress(&b, p)
			r.Line(b.String())
			phase := "" // committed: nothing runs until the next phase starts
			if p.Event == "" {
				phase = fmt.Sprintf("%s round %d attempt %d still running", p.Phase, p.Round, p.Attempt)
			}
			r.Enter(phase)
		}
	}
	d, err := eng.RunLifecycle(c.ctx, f.fs.Arg(0), report)
	if err != nil {
		return c.failChange("change run", err)
	}
	code := 0
	if d.Status != lifecycle.StatusAwaitingApproval && d.Status != lifecycle.StatusApplied && d.Status != lifecycle.StatusApproved {
		code = 1
	}
	if *f.json {
		if c.writeJSON(d) != 0 {
			return 1
		}
		return code
	}
	c.showDetail(f, d)
	return code
}

// writeProgress prints one progress line: a phase's worker starting, or
// its transition committed with what it took.
func writeProgress(w io.Writer, p LifecycleProgress) {
	if p.Event == "" {
		fmt.Fprintf(w, "%-9s round %d attempt %d  running…\n", p.Phase, p.Round, p.Attempt)
		return
	}
	fmt.Fprintf(w, "%-9s round %d attempt %d  %-48s %6.1fs %8d tokens  → %s\n", p.Phase, p.Round, p.Attempt,
		clip(p.Summary, 48), float64(p.WallMs)/1000, p.Tokens, p.Now)
}

// isTerminal reports whether w is a terminal: a file the terminal ioctl
// answers for (a character device such as /dev/null is not one).
func isTerminal(w io.Writer) bool { return progress.IsTerminal(w) }
