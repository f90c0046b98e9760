package product

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/needle-dev/needle/product/lifecycle"
)

// needle change approve, apply and cancel: the user's decisions.

const usageChangeApprove = `Usage: needle change approve [--repository DIR] [--data-dir DIR] [--patch b3:... --verification b3:... --lifecycle b3:... [--json]] ID

Approve applying the patch of a lifecycle awaiting approval.

Without digests it is a review: it prints the lifecycle (task, criteria
with the verifier's verdicts, tests, review) and the patch as a unified
diff, then the three digests the approval binds, and asks. Only the answer
"yes" (or "y") approves, and it approves exactly what was printed: had the
lifecycle moved on meanwhile, the approval is refused (exit 3). Any other
answer, or the end of stdin, approves nothing (exit 1).

With all three digests it approves without asking (for scripts): the
current patch, the current verification and the lifecycle's state digest
awaiting approval, as 'needle change show --json' prints them under
awaiting_approval. An approval for anything older is refused (exit 3) and
nothing is recorded.

Exit status: 0 approved, 1 not approved (the answer was not yes), 2 invalid
input (some digests but not all three, --json without them), 3 a conflict:
the lifecycle is not awaiting approval, or moved on.
`

func (c *cli) changeApprove(args []string) int {
	f := c.changeFlags("approve")
	patch, verification, lifecycle := f.fs.String("patch", "", ""), f.fs.String("verification", "", ""), f.fs.String("lifecycle", "", "")
	if code, ok := c.parseChange(f, "approve", usageChangeApprove, args, 1); !ok {
		return code
	}
	given := 0
	for _, d := range []string{*patch, *verification, *lifecycle} {
		if d != "" {
			given++
		}
	}
	refuse := ""
	switch {
	case given != 0 && given != 3:
		refuse = "give all three digests (--patch, --verification, --lifecycle), or none to review the patch and answer yes"
	case given == 0 && *f.json:
		refuse = "--json approves without asking: it needs the three digests ('needle change show --json ID' prints them under awaiting_approval)"
	}
	if refuse != "" {
		fmt.Fprintf(c.stderr, "needle change approve: %s\n\n%s", refuse, usageChangeApprove)
		return 2
	}
	eng, err := c.changeEngine(f, "", false)
	if err != nil {
		return c.failChange("change approve", err)
	}
	defer eng.Close()
	req := ApprovalRequest{Patch: *patch, Verification: *verification, Lifecycle: *lifecycle, By: "cli"}
	if given == 0 {
		b, code := c.reviewApproval(f, eng, f.fs.Arg(0))
		if b == nil {
			return code
		}
		req.Patch, req.Verification, req.Lifecycle = b.Patch, b.Verification, b.Lifecycle
	}
	a, err := eng.Approve(c.ctx, f.fs.Arg(0), req)
	if err != nil {
		return c.failChange("change approve", err)
	}
	if *f.json {
		return c.writeJSON(a)
	}
	fmt.Fprintf(c.stdout, "approved %s (approval %s); next: %s\n", a.PatchID, a.ApprovalID, c.runnable("needle change apply "+f.fs.Arg(0), *f.repo, *f.dataDir))
	return 0
}

// reviewApproval prints what approving lifecycle id would approve — the
// lifecycle, its patch as a unified diff and the binding — and asks. It
// returns the binding printed once the answer is yes; otherwise nil and
// the exit status (1 when the answer was anything else).
func (c *cli) reviewApproval(f changeFlags, eng *Engine, id string) (*lifecycle.ApprovalBinding, int) {
	d, err := eng.Lifecycle(c.ctx, id)
	if err != nil {
		return nil, c.failChange("change approve", err)
	}
	b := d.AwaitingApproval
	if b == nil {
		err := &Error{Op: "change.approve", Kind: kindConflict, Err: fmt.Errorf("lifecycle %s is %s/%s, not awaiting approval: nothing to approve", d.ID, d.Phase, d.Status)}
		return nil, c.failChange("change approve", err)
	}
	diff, err := eng.ChangeDiff(c.ctx, id)
	if err != nil {
		return nil, c.failChange("change approve", err)
	}
	d.Next = ""
	writeDetail(c.stdout, d)
	fmt.Fprintf(c.stdout, "\n%s\napproving binds:\n  patch        %s\n  verification %s\n  lifecycle    %s\n", diff, b.Patch, b.Verification, b.Lifecycle)
	fmt.Fprintf(c.stderr, "Approve this patch of %s? Type yes to approve: ", d.ID)
	answer, err := readAnswer(c.ctx, c.stdin)
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(c.stderr)
		return nil, c.failChange("change approve", err)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "yes" && a != "y" {
		fmt.Fprintf(c.stderr, "\nnot approved (the answer was %q): nothing was recorded\n", clip(strings.TrimSpace(answer), 40))
		return nil, 1
	}
	return b, 0
}

// readAnswer reads one line of at most 256 bytes from r, giving up when
// ctx ends (an interrupt while the prompt waits).
func readAnswer(ctx context.Context, r io.Reader) (string, error) {
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		s, err := bufio.NewReaderSize(io.LimitReader(r, 256), 256).ReadString('\n')
		ch <- line{s, err}
	}()
	select {
	case l := <-ch:
		return l.s, l.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
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
