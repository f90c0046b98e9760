package product

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/needle-dev/needle/product/lifecycle"
)

// needle change: the user's side of the change lifecycle. MCP stays three
// tools; a lifecycle is started, run, approved and applied from here (or
// from the HTTP routes of needle serve, over the same engine methods).

// exitConflict is needle change's exit status for a conflict: the 409 of
// an apply whose base drifted (nothing written), an approval for older
// digests, another runner of the same lifecycle.
const exitConflict = 3

// changeExitCode is needle change's exit status for err: a conflict has
// its own code; everything else is as elsewhere.
func changeExitCode(err error) int {
	if KindOf(err) == kindConflict {
		return exitConflict
	}
	return exitCodeOf(err)
}

// failChange reports err like fail, with needle change's exit status.
func (c *cli) failChange(cmd string, err error) int {
	c.fail(cmd, err)
	return changeExitCode(err)
}

// changeFlags are the flags every change subcommand takes.
type changeFlags struct {
	fs      *flag.FlagSet
	repo    *string
	dataDir *string
	json    *bool
}

func (c *cli) changeFlags(name string) changeFlags {
	fs := c.flags("change " + name)
	return changeFlags{fs: fs, repo: fs.String("repository", "", ""), dataDir: fs.String("data-dir", "", ""), json: fs.Bool("json", false, "")}
}

// parseChange parses a change subcommand's flags and checks the common ones
// and the number of arguments.
func (c *cli) parseChange(f changeFlags, name, usage string, args []string, nargs int) (int, bool) {
	if code, ok := c.parse(f.fs, usage, args); !ok {
		return code, false
	}
	if *f.repo == "" || *f.dataDir == "" || f.fs.NArg() != nargs {
		want := "--repository and --data-dir are required"
		if nargs == 1 {
			want += ", with one ID"
		}
		fmt.Fprintf(c.stderr, "needle change %s: %s\n\n%s", name, want, usage)
		return 2, false
	}
	return 0, true
}

// changeEngine opens the engine a change command runs on.
func (c *cli) changeEngine(f changeFlags, codexFlag string, workers bool) (*Engine, error) {
	cfg := Config{DataDir: *f.dataDir, Repository: *f.repo, Transport: "cli"}
	var err error
	if workers {
		if cfg.Codex, err = c.codexConfig(*f.dataDir, codexFlag); err != nil {
			return nil, err
		}
	}
	if cfg.Tests, err = c.testsConfig(*f.dataDir, cfg.Codex); err != nil {
		return nil, err
	}
	if changeConfigHook != nil {
		changeConfigHook(&cfg)
	}
	return c.openEngine(cfg)
}

// changeConfigHook, when set, edits the configuration of the change
// commands. Only the package's tests set it: the crash harness's child
// (this package's test binary run as needle) runs the lifecycle with
// working fake adapters.
var changeConfigHook func(*Config)

// settings reads the profile settings of dataDir (the runtime's store,
// inside it).
func (c *cli) settings(dataDir string) (map[string]string, error) {
	st, release, err := c.openStore(dataDir)
	if err != nil {
		return nil, err
	}
	defer release()
	return st.Settings(c.ctx)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

const usageChangeList = `Usage: needle change list --repository DIR --data-dir DIR [--json]

List the repository's lifecycles (newest first: id, change, phase/status,
round, task), then its changes without a lifecycle (prepare_change). Every
lifecycle is replayed from its journal and checked before it is shown; one
whose stored records do not check is listed as corrupt with its ids and
what does not check (show, run, approve and apply refuse it: exit 5).
`

func (c *cli) changeList(args []string) int {
	f := c.changeFlags("list")
	if code, ok := c.parseChange(f, "list", usageChangeList, args, 0); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change list", err)
	}
	defer eng.Close()
	ls, err := eng.Lifecycles(c.ctx)
	if err != nil {
		return c.failChange("change list", err)
	}
	cs, err := eng.Changes(c.ctx)
	if err != nil {
		return c.failChange("change list", err)
	}
	if *f.json {
		return c.writeJSON(struct {
			Lifecycles []LifecycleSummary `json:"lifecycles"`
			Changes    []changeSummary    `json:"changes"`
		}{ls, cs})
	}
	for _, l := range ls {
		if l.Status == lifecycleStatusCorrupt {
			fmt.Fprintf(c.stdout, "%s  %s  %-26s %s\n", l.ID, l.ChangeID, l.Status, l.Corrupt)
			continue
		}
		fmt.Fprintf(c.stdout, "%s  %s  %-26s round %d  %s\n", l.ID, l.ChangeID, string(l.Phase)+"/"+string(l.Status), l.Round, l.Task)
	}
	for _, ch := range cs {
		fmt.Fprintf(c.stdout, "%-28s  %s  %-26s rev %d    %s\n", "-", ch.ChangeID, ch.Status, ch.Revision, ch.Task)
	}
	return 0
}

const usageChangeShow = `Usage: needle change show --repository DIR --data-dir DIR [--json] ID

Show a lifecycle (ID is its lcy_… or its change's chg_…), or a change
from prepare_change without one (its status, patch, apply journal and the
approve line once verified). For a lifecycle: the task, the
criteria, phase and status, rounds and the repair, budget and usage, the
patch's operations, each frozen test plan with its result, the review's
findings, the verification's judgement of each criterion, the apply
journal, and what to run next — when it awaits approval, the exact
'needle change approve' line with the digests to approve. The journal is
replayed and every digest checked first.
`

func (c *cli) changeShow(args []string) int {
	f := c.changeFlags("show")
	if code, ok := c.parseChange(f, "show", usageChangeShow, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change show", err)
	}
	defer eng.Close()
	id := f.fs.Arg(0)
	if lid, err := eng.lifecycleIDOf(c.ctx, id); err != nil {
		return c.failChange("change show", err)
	} else if lid == "" {
		cd, err := eng.Change(c.ctx, id)
		if err != nil {
			return c.failChange("change show", err)
		}
		if *f.json {
			return c.writeJSON(cd)
		}
		fmt.Fprintf(c.stdout, "change %s (no lifecycle): %s, revision %d, patch %s\n  task: %s\n", cd.ChangeID, cd.Status, cd.Revision, cd.PatchID, cd.Task)
		for _, op := range cd.Operations {
			fmt.Fprintf(c.stdout, "    %s %s\n", op.Op, op.Path)
		}
		if a := cd.Apply; a != nil {
			fmt.Fprintf(c.stdout, "  apply %s: %s %s %s\n", a.IntentID, a.Status, a.Cause, strings.Join(a.Paths, ", "))
		}
		if cd.Next != "" {
			fmt.Fprintf(c.stdout, "next: %s\n", cd.Next)
		}
		return 0
	}
	d, err := eng.Lifecycle(c.ctx, id)
	if err != nil {
		return c.failChange("change show", err)
	}
	if *f.json {
		return c.writeJSON(d)
	}
	writeDetail(c.stdout, d)
	return 0
}

// writeDetail prints a lifecycle for a person.
func writeDetail(w io.Writer, d LifecycleDetail) {
	fmt.Fprintf(w, "lifecycle %s (change %s)\n", d.ID, d.ChangeID)
	fmt.Fprintf(w, "  %s/%s", d.Phase, d.Status)
	if d.Reason != "" {
		fmt.Fprintf(w, " (%s)", d.Reason)
	}
	fmt.Fprintf(w, ", round %d, repairs used %d, seq %d, state %s\n", d.Round, d.RepairsUsed, d.Seq, d.StateDigest)
	fmt.Fprintf(w, "  task: %s\n", d.Task)
	for _, cr := range d.Criteria {
		fmt.Fprintf(w, "  criterion %d: %s\n", cr.Criterion, oneLine(cr.Text))
	}
	fmt.Fprintf(w, "  usage: %d tokens, %d ms, %d worker runs (budget %d, %d ms, %d)\n", d.Usage.Tokens, d.Usage.WallMs,
		d.Usage.WorkerRuns, d.Budget.Tokens, d.Budget.WallMs, d.Budget.WorkerRuns)
	if d.Patch != nil {
		fmt.Fprintf(w, "  patch %s (round %d): %d file(s), %d bytes\n", d.Patch.PatchID, d.Patch.Round, d.Patch.Files, d.Patch.Bytes)
		for _, op := range d.Patch.Operations {
			fmt.Fprintf(w, "    %s %s\n", op.Op, op.Path)
		}
	}
	for _, p := range d.TestPlans {
		outcome := string(p.Outcome)
		if outcome == "" {
			outcome = "not run"
		}
		fmt.Fprintf(w, "  test %s: %s (%s)\n", p.Test, outcome, p.Command)
		if p.Detail != "" {
			fmt.Fprintf(w, "    why: %s\n", p.Detail)
		}
	}
	if d.Review != nil {
		fmt.Fprintf(w, "  review %s: %d finding(s)\n", d.Review.ReviewID, len(d.Review.Findings))
		for _, fd := range d.Review.Findings {
			fmt.Fprintf(w, "    %s (criterion %d): reviewer's words (unverified): %s\n", fd.Severity, fd.Criterion, strconv.Quote(fd.Summary))
		}
	}
	if v := d.Verification; v != nil {
		fmt.Fprintf(w, "  verification %s: %s\n", v.VerificationID, v.Verdict)
		for _, cr := range v.Criteria {
			fmt.Fprintf(w, "    criterion %d: %s — verifier's reason (unverified): %s\n", cr.Criterion, cr.Status, strconv.Quote(oneLine(cr.Reason)))
		}
		if v.RepairInstructions != "" {
			fmt.Fprintf(w, "    repair, the verifier's words (unverified): %s\n", strconv.Quote(oneLine(v.RepairInstructions)))
		}
	}
	if a := d.Apply; a != nil {
		fmt.Fprintf(w, "  apply %s: %s %s %s\n", a.IntentID, a.Status, a.Cause, strings.Join(a.Paths, ", "))
	}
	if d.Next != "" {
		fmt.Fprintf(w, "next: %s\n", d.Next)
	}
}

const usageChangeEvents = `Usage: needle change events --repository DIR --data-dir DIR [--json] ID

Print a lifecycle's journal in order: seq, time, event kind, where the
lifecycle was after it, and a one-line summary, each event's payload digest
and the state digest it led to (--json). The journal is replayed and every
digest checked first.
`

func (c *cli) changeEvents(args []string) int {
	f := c.changeFlags("events")
	if code, ok := c.parseChange(f, "events", usageChangeEvents, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change events", err)
	}
	defer eng.Close()
	evs, err := eng.LifecycleEvents(c.ctx, f.fs.Arg(0))
	if err != nil {
		return c.failChange("change events", err)
	}
	if *f.json {
		return c.writeJSON(evs)
	}
	for _, e := range evs {
		line := e.Summary
		if e.Detail != "" {
			line += "; worker's report (unverified): " + strconv.Quote(e.Detail)
		}
		fmt.Fprintf(c.stdout, "%3d  %s  %-20s %-26s %s\n", e.Seq, e.At, e.Kind, string(e.Phase)+"/"+string(e.Status), line)
	}
	return 0
}

const usageChangeDiff = `Usage: needle change diff --repository DIR --data-dir DIR ID

Print the current patch of a change (a lifecycle's lcy_… or chg_…, or a
change from prepare_change) as a unified diff that git apply accepts,
against the base the patch was made from. A base that is neither in the
work tree nor at HEAD is an error, never a diff against something else.
`

func (c *cli) changeDiff(args []string) int {
	fs := c.flags("change diff")
	repo, dataDir := fs.String("repository", "", ""), fs.String("data-dir", "", "")
	f := changeFlags{fs: fs, repo: repo, dataDir: dataDir, json: new(bool)}
	if code, ok := c.parseChange(f, "diff", usageChangeDiff, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change diff", err)
	}
	defer eng.Close()
	diff, err := eng.ChangeDiff(c.ctx, fs.Arg(0))
	if err != nil {
		return c.failChange("change diff", err)
	}
	fmt.Fprint(c.stdout, diff)
	return 0
}

const usageChangeStart = `Usage: needle change start --repository DIR --data-dir DIR --task TEXT --criterion TEXT... --scope PATH...
                          --test-plan ARTIFACT_ID... [flags]

Start a lifecycle: freeze the change id, the source snapshot, the role
profile's explorer, implementer, test-runner, reviewer and verifier
revisions, the certified test plans, the budget and concurrency one. Nothing
runs until 'needle change run'. Prints the lifecycle (show's form).

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
	for _, s := range scopes {
		scope := pathScope{Path: s, Kind: scopeExact}
		if s == "." || strings.HasSuffix(s, "/") {
			scope = pathScope{Path: strings.TrimSuffix(s, "/"), Kind: scopeSubtree}
			if scope.Path == "" {
				scope.Path = "."
			}
		}
		st.Request.Scopes = append(st.Request.Scopes, scope)
	}
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
	if *f.json {
		return c.writeJSON(d)
	}
	writeDetail(c.stdout, d)
	return 0
}

const usageChangeRun = `Usage: needle change run --repository DIR --data-dir DIR [--codex CMD] [--json] ID

Run a lifecycle: replay its journal, run the one pending phase's worker
(explore, implement, review and verify are Codex App Server workers; test is
Needle running the frozen test plans in its sandbox), store what it produced,
commit the transition, and go on until the lifecycle awaits approval or ends.
A run that is interrupted or killed loses nothing: the next run takes up
where the journal says, and no committed phase runs again. On a terminal,
each committed phase prints a line on stderr.

Flags:
  --codex CMD   the App Server command (overrides the codex.command setting)
  --json        print the lifecycle as JSON at the end

Exit status: 0 awaiting approval (or applied), 1 the lifecycle ended without
a verified patch or a failure, 2 invalid input, 3 a conflict: another runner
holds the lifecycle or moved it on, or the work tree moved under it.
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
	var progress func(LifecycleProgress)
	if c.terminal || isTerminal(c.stderr) {
		progress = func(p LifecycleProgress) { writeProgress(c.stderr, p) }
	}
	d, err := eng.RunLifecycle(c.ctx, f.fs.Arg(0), progress)
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
	writeDetail(c.stdout, d)
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
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

const usageChangeApprove = `Usage: needle change approve --repository DIR --data-dir DIR --patch b3:... --verification b3:... --lifecycle b3:... [--json] ID

Approve applying the patch of a lifecycle awaiting approval (or of a
verified change without a lifecycle). The three digests are the ones
'needle change show' prints: the current patch, the current verification and
the lifecycle's state digest awaiting approval (for a change without a
lifecycle: its change digest). An approval for anything older is refused
(exit 3) and nothing is recorded.
`

func (c *cli) changeApprove(args []string) int {
	f := c.changeFlags("approve")
	patch, verification, lifecycle := f.fs.String("patch", "", ""), f.fs.String("verification", "", ""), f.fs.String("lifecycle", "", "")
	if code, ok := c.parseChange(f, "approve", usageChangeApprove, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change approve", err)
	}
	defer eng.Close()
	a, err := eng.Approve(c.ctx, f.fs.Arg(0), ApprovalRequest{Patch: *patch, Verification: *verification, Lifecycle: *lifecycle, By: "cli"})
	if err != nil {
		return c.failChange("change approve", err)
	}
	if *f.json {
		return c.writeJSON(a)
	}
	fmt.Fprintf(c.stdout, "approved %s (approval %s); next: needle change apply %s\n", a.PatchID, a.ApprovalID, f.fs.Arg(0))
	return 0
}

const usageChangeApply = `Usage: needle change apply --repository DIR --data-dir DIR [--abandon] [--json] ID

Write an approved patch to the work tree. What the proof depended on must be
as the snapshot the patch was made, tested and verified on had it: every
file the patch touches (its base), every file the verification's test runs
compiled, and no new file in a package they compiled. Any drift is a
conflict (exit 3, the 409) naming the paths, and nothing is written — the
work tree, the index and HEAD stay as they were. Other changes (HEAD moved
with the same content, files the proof did not depend on) are allowed and
printed as notes. The apply is journaled (intent, each file, done): an apply a crash
interrupted is finished (every file written) or undone (anything less) when
Needle next opens the repository, and 'needle change show' says which. The
index and HEAD are never touched: stage the result as after git apply.
Applying an applied change again writes nothing and prints the first
apply's outcome, with the time it was applied.

An interrupted apply cannot be finished or undone when a file it touches was
edited since (it holds neither its content before nor after the patch):
apply then refuses (exit 3) and writes nothing. --abandon ends such an apply:
every file that still holds exactly what the apply wrote gets its content
before back, every other file is left as it is, and the apply is recorded as
rolled back with what was found per file (a lifecycle is approved again; a
later apply checks the tree afresh). Killed half way, --abandon is run again.

Flags:
  --abandon   end the interrupted apply of ID instead (see above)
  --json      print the result as JSON
`

func (c *cli) changeApply(args []string) int {
	f := c.changeFlags("apply")
	abandon := f.fs.Bool("abandon", false, "")
	if code, ok := c.parseChange(f, "apply", usageChangeApply, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change apply", err)
	}
	defer eng.Close()
	if *abandon {
		res, err := eng.AbandonApply(c.ctx, f.fs.Arg(0), "cli")
		if err != nil {
			return c.failChange("change apply", err)
		}
		if *f.json {
			return c.writeJSON(res)
		}
		fmt.Fprintf(c.stdout, "abandoned the interrupted apply %s of %s; now %s\n", res.IntentID, f.fs.Arg(0), res.Status)
		for _, a := range res.Files {
			what := "left as it is"
			if a.Restored {
				what = "restored to its content before the patch"
			}
			fmt.Fprintf(c.stdout, "  %s: held %s; %s\n", a.Path, a.Found, what)
		}
		return 0
	}
	res, err := eng.Apply(c.ctx, f.fs.Arg(0))
	if err != nil {
		return c.failChange("change apply", err)
	}
	if *f.json {
		return c.writeJSON(res)
	}
	fmt.Fprintf(c.stdout, "applied %s at %s: %s (intent %s)\n", res.PatchID, res.AppliedAt, strings.Join(res.Paths, ", "), res.IntentID)
	for _, n := range res.Notes {
		fmt.Fprintf(c.stdout, "note: %s\n", n)
	}
	return 0
}

const usageChangeCancel = `Usage: needle change cancel --repository DIR --data-dir DIR [--note TEXT] [--json] ID

Cancel a lifecycle that is not applying. The work in flight stops, wherever
its runner runs: the running phase's worker turn is interrupted and its
process group killed, or its test run killed; its checkout is removed and
the stop recorded. cancel returns only then; the runner exits 3 saying that
the lifecycle was cancelled.
`

func (c *cli) changeCancel(args []string) int {
	f := c.changeFlags("cancel")
	note := f.fs.String("note", "", "")
	if code, ok := c.parseChange(f, "cancel", usageChangeCancel, args, 1); !ok {
		return code
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change cancel", err)
	}
	defer eng.Close()
	d, err := eng.CancelLifecycle(c.ctx, f.fs.Arg(0), *note)
	if err != nil {
		return c.failChange("change cancel", err)
	}
	if *f.json {
		return c.writeJSON(d)
	}
	writeDetail(c.stdout, d)
	return 0
}
