package product

import (
	"fmt"
	"io"
	"slices"
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
a line on stderr when it is committed. On a terminal a live line below them
tells the phase running (its round and attempt after the first), how long it
has run, and a bar of the phase runs done of the most a lifecycle makes (9:
five, and four again in its one repair round); it is gone when the run ends,
interrupted or not. Elsewhere (a log) a line also tells each phase starting,
and one every 10 s the phase still running.

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
	report, done := c.changeRunProgress()
	defer done() // a panic, too, leaves no live line behind
	d, err := eng.RunLifecycle(c.ctx, f.fs.Arg(0), report)
	done() // the live line is gone before anything else is written
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

// changeRunProgress shows a change run's progress on stderr: report
// takes each phase starting and committed, done ends the display. On a
// terminal (the client's too, through the resident runtime) a live line
// tells the phase running (its round and attempt after the first), its
// place in the lifecycle as a bar of phase runs (runPlace), and how long
// it has run; each committed transition is a line of its own above it,
// and done clears it, whether the run succeeded, failed or was
// interrupted. Elsewhere (a log) each start and commit is a line, and a
// line every 10 s tells the phase still running.
func (c *cli) changeRunProgress() (report func(LifecycleProgress), done func()) {
	if c.terminal || isTerminal(c.stderr) {
		r := progress.NewFor(c.stderr, "", progress.Options{Terminal: true, Columns: c.columns, PhaseTime: true})
		return func(p LifecycleProgress) {
			if p.Event != "" {
				var b strings.Builder
				writeProgress(&b, p)
				r.Line(b.String())
				return
			}
			status := fmt.Sprintf("phase %d of %d", slices.Index(workerPhases, p.Phase)+1, len(workerPhases))
			if p.Round > 1 {
				status += fmt.Sprintf(", round %d", p.Round)
			}
			if p.Attempt > 1 {
				status += fmt.Sprintf(", attempt %d", p.Attempt)
			}
			r.Step(string(p.Phase), status)
			ran, most := runPlace(p.Phase, p.Round)
			r.Count(ran, most, "runs")
		}, r.Close
	}
	r := progress.NewFor(c.stderr, "needle change run: ", progress.Options{PhaseTime: true})
	return func(p LifecycleProgress) {
		var b strings.Builder
		writeProgress(&b, p)
		r.Line(b.String())
		phase := "" // committed: nothing runs until the next phase starts
		if p.Event == "" {
			phase = fmt.Sprintf("%s round %d attempt %d still running", p.Phase, p.Round, p.Attempt)
		}
		r.Enter(phase)
	}, r.Close
}

// workerPhases are the phases whose worker runs, in order: round 1 runs
// them all, a repair round all but explore again.
var workerPhases = lifecycle.Phases[:len(lifecycle.Phases)-1]

// runPlace places the run of phase in round on a change run's bar: ran is
// how many phase runs come before it, of the most a lifecycle makes (round
// 1's five, and four more for each repair it may use). A retried phase
// keeps its place, and a repair round's runs follow round 1's, so the bar
// never moves back and never passes its end: a lifecycle verified in
// round 1 ends with the repair round's part never filled.
func runPlace(phase lifecycle.Phase, round int) (ran, most int) {
	repairs := len(workerPhases) - 1
	most = len(workerPhases) + repairs*lifecycle.RepairReservations
	i := slices.Index(workerPhases, phase)
	if round <= 1 {
		return max(i, 0), most
	}
	return min(len(workerPhases)+repairs*(round-2)+max(i-1, 0), most), most
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

// terminalColumns returns the width of the terminal w is, 0 when it is no
// terminal.
func terminalColumns(w io.Writer) int { return progress.Columns(w) }
