package product

import (
	"fmt"
	"strings"
)

// needle change approve, apply and cancel: the user's decisions.

const usageChangeApprove = `Usage: needle change approve [--repository DIR] [--data-dir DIR] --patch b3:... --verification b3:... --lifecycle b3:... [--json] ID

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
	fmt.Fprintf(c.stdout, "approved %s (approval %s); next: %s\n", a.PatchID, a.ApprovalID, c.runnable("needle change apply "+f.fs.Arg(0), *f.repo, *f.dataDir))
	return 0
}

const usageChangeApply = `Usage: needle change apply [--repository DIR] [--data-dir DIR] [--abandon] [--json] ID

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

const usageChangeCancel = `Usage: needle change cancel [--repository DIR] [--data-dir DIR] [--note TEXT] [--json] ID

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
	c.showDetail(f, d)
	return 0
}
