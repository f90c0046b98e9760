package product

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// needle change list, show, events and diff: the reads.

const usageChangeList = `Usage: needle change list [--repository DIR] [--data-dir DIR] [--json]

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

const usageChangeShow = `Usage: needle change show [--repository DIR] [--data-dir DIR] [--json] ID

Show a lifecycle (ID is its lcy_… or its change's chg_…), or a change
from prepare_change without one (its status, patch, apply journal and the
approve line once verified). For a lifecycle: the task, the
criteria, phase and status, rounds and the repair, budget and usage, the
patch's operations, each frozen test plan with its result, the review's
findings, the verification's judgement of each criterion, the apply
journal, and what to run next — when it awaits approval, the
'needle change approve ID' line, which shows the patch and the digests the
approval binds, and asks (--json has those digests under
awaiting_approval, for scripts). The journal is replayed and every digest
checked first.
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
			fmt.Fprintf(c.stdout, "next: %s\n", c.runnable(cd.Next, *f.repo, *f.dataDir))
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
	c.showDetail(f, d)
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

const usageChangeEvents = `Usage: needle change events [--repository DIR] [--data-dir DIR] [--json] ID

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

const usageChangeDiff = `Usage: needle change diff [--repository DIR] [--data-dir DIR] ID

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

// showDetail prints a lifecycle for a person, its next command runnable as
// printed.
func (c *cli) showDetail(f changeFlags, d LifecycleDetail) {
	d.Next = c.runnable(d.Next, *f.repo, *f.dataDir)
	writeDetail(c.stdout, d)
}
