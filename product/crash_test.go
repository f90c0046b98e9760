package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The crash-injection harness. A child `needle change run` (then `change
// approve` and `change apply`) — this test binary run as needle, with the
// working fake adapters and the failpoints armed — is killed with SIGKILL
// at an injected point: before an adapter, after its side effect, after
// its artifact is persisted, inside the transition's transaction before
// COMMIT, after the commit, after the apply intent, after each file of the
// apply, before the apply's done, and during the recovery of an
// interrupted apply. After every kill, code that does not share the
// kernel's checks holds that the journal replays to the projection, that
// no committed event lacks its persisted artifact and no artifact is
// loose but the pending invocation's, that no side effect happened twice
// under one invocation id (the fakes do not deduplicate: the product's
// invocation records do), none without its committed start record and
// none for an invocation that is neither committed nor pending, that
// the change's repair reservation matches the lifecycle's, and that the
// work tree is, once the repository is opened again, exactly the base or
// exactly the applied patch with the apply journal saying which (HEAD and
// the index untouched). Each trial then runs on to the end, with more
// kills on the way, and must end in the uncrashed run's final state —
// unless a kill interrupted a worker before its result was recorded: then
// that run is committed as an interrupted failure and retried under a new
// id (checkInterrupted).
//
// NEEDLE_CRASH_KILLS sets how many kills (default 40; make crash runs
// 1000); NEEDLE_CRASH_SEED the seed of the chains.

// armCrashChild arms the failpoints and the fake adapters in this test
// binary started as needle by the harness.
func armCrashChild() {
	if err := failpoint.Arm(os.Getenv("NEEDLE_FAILPOINT"), os.Getenv("NEEDLE_FAILPOINT_COUNT")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if name := os.Getenv("NEEDLE_FAKE_SCRIPT"); name != "" {
		data, err := os.ReadFile(name)
		var script fakeScript
		if err == nil {
			err = json.Unmarshal(data, &script)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake script:", err)
			os.Exit(2)
		}
		changeConfigHook = func(c *Config) {
			a := script.adapters(c.Repository)
			c.Lifecycle = &a
		}
	}
}

// crashScenario is a lifecycle the harness runs to its end.
type crashScenario struct {
	name   string
	script fakeScript
	apply  bool // verified: approve and apply
	// Filled by prepare.
	base     string // the trial directory every trial is restored to
	template string
	id       string
	points   []crashPoint
	final    string // the uncrashed final state, masked
	tree     string // the uncrashed final tree (the touched files)
}

// crashPoint is the n-th hit of a failpoint in one step's child.
type crashPoint struct {
	step string // run | apply
	name string
	n    int
}

func (p crashPoint) String() string { return fmt.Sprintf("%s/%s:%d", p.step, p.name, p.n) }

// crashFiles are the files the scenarios' patches touch: a modification, an
// addition and a deletion, so an interrupted apply can be half done.
var crashFiles = []string{"notes/added.txt", "options.go", "search.go"}

func crashScenarios(t *testing.T, repo string) []*crashScenario {
	edit := func(comment string) map[string]string {
		return map[string]string{
			"search.go":       splitCommented(t, repo, comment),
			"notes/added.txt": "a file the patch adds: " + comment + "\n",
			"options.go":      fakeDelete,
		}
	}
	return []*crashScenario{
		{name: "verified", apply: true, script: fakeScript{Patches: []map[string]string{edit("// one")},
			Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}}},
		{name: "repair", apply: true, script: fakeScript{Patches: []map[string]string{edit("// one"), edit("// two")},
			Tests: []lifecycle.TestOutcome{lifecycle.TestFailed, lifecycle.TestPassed}, Verdicts: []string{fakeRepairable, fakeVerified},
			Crash: map[lifecycle.Phase]int{lifecycle.PhaseReview: 1}}},
		{name: "inconclusive", script: fakeScript{Patches: []map[string]string{edit("// one")},
			Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeInconclusive}}},
	}
}

func TestLifecycleCrashes(t *testing.T) {
	kills := 40
	if v, err := strconv.Atoi(os.Getenv("NEEDLE_CRASH_KILLS")); err == nil && v > 0 {
		kills = v
	}
	seed := uint64(14)
	if v, err := strconv.ParseUint(os.Getenv("NEEDLE_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, 1014))
	root := t.TempDir()
	probe := MustFixtureRepo(t, "grepx", false)
	scenarios := crashScenarios(t, probe)
	for _, sc := range scenarios {
		sc.prepare(t, filepath.Join(root, sc.name))
	}
	done, trials := 0, 0
	byPoint := map[string]int{}
	for done < kills {
		for _, sc := range scenarios {
			for _, p := range sc.points {
				if done >= kills {
					break
				}
				n := sc.trial(t, rng, p, byPoint)
				done += n
				trials++
				if t.Failed() {
					t.Fatalf("stopped after %d kills in %d trials (scenario %s, first kill at %s)", done, trials, sc.name, p)
				}
			}
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range byPoint {
			if !yield(k) {
				return
			}
		}
	})
	var dist []string
	for _, k := range names {
		dist = append(dist, fmt.Sprintf("%s=%d", k, byPoint[k]))
	}
	t.Logf("%d kills in %d trials over %d scenarios (seed %d); by point: %s", done, trials, len(scenarios), seed, strings.Join(dist, " "))
}

// prepare builds the scenario's template (a repository, a store with the
// lifecycle started, the fake script) and runs it once uncrashed, counting
// the failpoints each step passes and recording the final state and tree.
func (sc *crashScenario) prepare(t *testing.T, dir string) {
	t.Helper()
	sc.prepareOnly(t, dir)
	sc.count(t, dir)
}

// prepareOnly builds the template and leaves a copy at the trial
// directory.
// setGate makes the scenario's first fake worker wait at gate (a FIFO): a
// child run of the prepared scenario holds there until the test opens it.
func (sc *crashScenario) setGate(t *testing.T, gate string) {
	t.Helper()
	var script fakeScript
	if err := json.Unmarshal(MustReadFile(t, filepath.Join(sc.base, "script.json")), &script); err != nil {
		t.Fatal(err)
	}
	script.Gate = gate
	data, _ := json.Marshal(script)
	MustWriteFile(t, filepath.Join(sc.base, "script.json"), string(data))
}

func (sc *crashScenario) prepareOnly(t *testing.T, dir string) {
	t.Helper()
	sc.base = filepath.Join(dir, "trial")
	sc.template = filepath.Join(dir, "template")
	repo := filepath.Join(sc.base, "repo")
	src := MustFixtureRepo(t, "grepx", true)
	if err := os.MkdirAll(sc.base, 0o755); err != nil {
		t.Fatal(err)
	}
	MustRun(t, "", "cp", "-a", src, repo)
	script := sc.script
	script.Effects = filepath.Join(sc.base, "effects")
	script.Review, script.Tokens = fakeReview, 700
	if err := os.MkdirAll(script.Effects, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(script)
	MustWriteFile(t, filepath.Join(sc.base, "script.json"), string(data))
	te := &testEngine{tb: t, repo: repo, data: filepath.Join(sc.base, "data")}
	te.reopen()
	plan := te.mustCertify(focusedSplit).ArtifactID
	d, err := te.StartLifecycle(context.Background(), LifecycleStart{TestPlans: []string{plan}, Request: changeRequest{
		Task: "Comment splitCRLF, add a note, drop options.go.", Criteria: []string{"The comment of splitCRLF names both CRLF and LF."},
		Scopes: []pathScope{{Path: "search.go", Kind: scopeExact}, {Path: "options.go", Kind: scopeExact}, {Path: "notes", Kind: scopeSubtree}}}})
	if err != nil {
		t.Fatal(err)
	}
	te.Close()
	sc.id = d.ID
	MustRun(t, "", "cp", "-a", sc.base, sc.template)
}

// count runs the scenario uncrashed, counting the failpoints each step
// passes, and records the final state and tree.
func (sc *crashScenario) count(t *testing.T, dir string) {
	t.Helper()
	for _, step := range sc.steps() {
		count := filepath.Join(dir, "count-"+step)
		if code, killed := sc.child(t, step, "", count); killed || code != 0 && !(step == "run" && !sc.apply && code == 1) {
			t.Fatalf("%s: uncrashed %s exited %d (killed %v)", sc.name, step, code, killed)
		}
		seen := map[string]int{}
		for _, name := range strings.Fields(string(MustReadFile(t, count))) {
			seen[name]++
			sc.points = append(sc.points, crashPoint{step: step, name: name, n: seen[name]})
		}
	}
	sc.final, sc.tree = sc.outcome(t)
	t.Logf("%s: %d failpoints on the uncrashed path", sc.name, len(sc.points))
}

func (sc *crashScenario) steps() []string {
	if sc.apply {
		return []string{"run", "approve", "apply"}
	}
	return []string{"run"}
}

// child runs one step in a child process with the failpoint spec (or
// counting into count). It reports the exit code and whether SIGKILL ended
// it.
func (sc *crashScenario) child(t *testing.T, step, spec, count string) (code int, killed bool) {
	t.Helper()
	repo, data := filepath.Join(sc.base, "repo"), filepath.Join(sc.base, "data")
	args := []string{"change", step, "--repository", repo, "--data-dir", data}
	if step == "approve" {
		b := sc.binding(t)
		args = append(args, "--patch", b.Patch, "--verification", b.Verification, "--lifecycle", b.Lifecycle)
	}
	cmd := needleCommand(t, append(args, sc.id)...)
	cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"),
		"NEEDLE_FAILPOINT="+spec, "NEEDLE_FAILPOINT_COUNT="+count)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return -1, true
	case errors.As(err, &ee):
		if ee.ExitCode() != 1 || step != "run" {
			t.Logf("%s %s (failpoint %q) exited %d:\n%s", sc.name, step, spec, ee.ExitCode(), out)
		}
		return ee.ExitCode(), false
	}
	t.Fatalf("%s %s: %v", sc.name, step, err)
	return 0, false
}

// reached reports whether a step's goal is already reached: a kill after
// the approval committed, or an apply that the next open finished.
func (sc *crashScenario) reached(t *testing.T, step string) bool {
	t.Helper()
	st, err := OpenStore(context.Background(), filepath.Join(sc.base, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var status string
	if err := st.db.QueryRow(`SELECT status FROM change_lifecycles WHERE lifecycle_id = ?`, sc.id).Scan(&status); err != nil {
		t.Fatal(err)
	}
	switch step {
	case "approve":
		return status == "approved" || status == "applying" || status == "applied"
	case "apply":
		return status == "applied"
	}
	return false
}

func (sc *crashScenario) binding(t *testing.T) lifecycle.ApprovalBinding {
	t.Helper()
	_, v := sc.stored(t)
	return v.State.Binding()
}

// stored is sc's lifecycle as stored, and its journal replayed and checked.
func (sc *crashScenario) stored(t *testing.T) (storedLifecycle, lifecycleView) {
	t.Helper()
	l := sc.load(t)
	v, err := verifyLifecycle(l)
	if err != nil {
		t.Fatal(err)
	}
	return l, v
}

// load is sc's lifecycle as its store holds it, unchecked.
func (sc *crashScenario) load(t *testing.T) storedLifecycle {
	t.Helper()
	st, err := OpenStore(context.Background(), filepath.Join(sc.base, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.loadLifecycle(context.Background(), sc.repoRoot(t), sc.id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (sc *crashScenario) repoRoot(t *testing.T) string {
	root, err := filepath.EvalSymlinks(filepath.Join(sc.base, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// trial restores the template, kills the first step that passes p at p,
// and goes on to the end with up to two more random kills. It returns the
// number of kills.
func (sc *crashScenario) trial(t *testing.T, rng *rand.Rand, first crashPoint, byPoint map[string]int) int {
	t.Helper()
	if err := os.RemoveAll(sc.base); err != nil {
		t.Fatal(err)
	}
	MustRun(t, "", "cp", "-a", sc.template, sc.base)
	queue := []crashPoint{first}
	for range rng.IntN(3) {
		p := sc.points[rng.IntN(len(sc.points))]
		if rng.IntN(4) == 0 && sc.apply {
			p = crashPoint{step: "apply", name: "recovery.after_restore", n: 1}
		}
		queue = append(queue, crashPoint{step: p.step, name: p.name, n: 1 + rng.IntN(p.n)})
	}
	kills, interrupted := 0, 0
	for _, step := range sc.steps() {
		if interrupted > 0 && sc.ended(t) {
			break // the interrupted runs used up a phase's retry: nothing to approve
		}
		for attempt := 0; !sc.reached(t, step); attempt++ {
			if attempt > 8 {
				t.Fatalf("%s: %s never finished", sc.name, step)
			}
			spec := ""
			if len(queue) > 0 && queue[0].step == step {
				spec = fmt.Sprintf("%s:%d", queue[0].name, queue[0].n)
			}
			code, killed := sc.child(t, step, spec, "")
			if spec != "" {
				byPoint[queue[0].name] += boolInt(killed)
				if killed && queue[0].name == "adapter.before_record" {
					interrupted++
				}
				queue = queue[1:]
			}
			if killed {
				kills++
				// The check opens the repository, which recovers an
				// interrupted apply; when the next kill is to land in that
				// recovery, the next child opens it first.
				sc.checkInvariants(t, spec, len(queue) == 0 || queue[0].name != "recovery.after_restore")
				if t.Failed() {
					return kills
				}
				continue
			}
			if code != 0 && !(step == "run" && (!sc.apply || interrupted > 0) && code == 1) {
				t.Fatalf("%s: %s exited %d after %d kills", sc.name, step, code, kills)
			}
			break
		}
	}
	final, tree := sc.outcome(t)
	if interrupted > 0 {
		sc.checkInterrupted(t, interrupted, tree)
		return kills
	}
	if final != sc.final {
		t.Errorf("%s: after %d kills the final state differs from the uncrashed run's:\n%s\nwant\n%s", sc.name, kills, final, sc.final)
	}
	if tree != sc.tree {
		t.Errorf("%s: after %d kills the work tree differs from the uncrashed run's", sc.name, kills)
	}
	return kills
}

// ended reports whether the lifecycle reached a terminal state.
func (sc *crashScenario) ended(t *testing.T) bool {
	t.Helper()
	_, ok := lifecycle.Pending(sc.state(t))[0].(lifecycle.Done)
	return ok
}

// checkInterrupted holds the end of a trial in which n kills interrupted
// an adapter after its worker's side effect and before its result was
// recorded. Such a worker is never run again under its invocation id: the
// next run commits a phase_failed (crashed, interrupted) for it, and the
// phase's retry runs under a new id. So the journal holds exactly n such
// events, and the lifecycle ends as the uncrashed run did — or, when the
// interruptions used up a phase's one retry, failed (retries exhausted)
// with the work tree untouched.
func (sc *crashScenario) checkInterrupted(t *testing.T, n int, tree string) {
	t.Helper()
	l := sc.load(t)
	seen := 0
	for _, e := range l.Journal {
		ev, err := decodeLifecycleEvent(e.Kind, []byte(e.Payload))
		if err != nil {
			t.Fatal(err)
		}
		if pf, ok := ev.(lifecycle.PhaseFailed); ok && pf.Failure == lifecycle.FailureCrashed && strings.HasPrefix(pf.Detail, "interrupted:") {
			seen++
		}
	}
	if seen != n {
		t.Errorf("%s: %d interrupted adapter runs, %d phase_failed (interrupted) in the journal", sc.name, n, seen)
	}
	s := sc.state(t)
	var want lifecycle.State
	if err := json.Unmarshal([]byte(sc.final), &want); err != nil {
		t.Fatal(err)
	}
	switch {
	case s.Status == want.Status && s.Phase == want.Phase && s.Reason == want.Reason:
		if tree != sc.tree {
			t.Errorf("%s: after %d interrupted runs the work tree differs from the uncrashed run's", sc.name, n)
		}
	case s.Status == lifecycle.StatusFailed && s.Reason == lifecycle.ReasonWorkerFailed:
		if tree != sc.templateTree(t) {
			t.Errorf("%s: a lifecycle that failed changed the work tree", sc.name)
		}
	default:
		t.Errorf("%s: after %d interrupted runs the lifecycle is %s, want %s/%s or failed (retries exhausted)", sc.name, n, s.Where(), want.Phase, want.Status)
	}
}

// outcome is the final state and the touched files of the tree. Masked:
// the wall time (and so the approval and intent ids, which bind the
// state digest that includes it) and seq (a rolled-back apply adds
// events).
func (sc *crashScenario) outcome(t *testing.T) (string, string) {
	t.Helper()
	s, err := decodeLifecycleState([]byte(sc.load(t).State))
	if err != nil {
		t.Fatal(err)
	}
	s.Usage.WallMs, s.Seq, s.Approval, s.ApplyIntent = 0, 0, "", ""
	return string(s.Canonical()), sc.touched(t)
}

// touched is the content of the files the patch touches ("-" when absent).
func (sc *crashScenario) touched(t *testing.T) string {
	var b strings.Builder
	for _, p := range crashFiles {
		data, err := os.ReadFile(filepath.Join(sc.base, "repo", p))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, "%s: -\n", p)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s\n", p, digestOf(string(data)))
	}
	return b.String()
}

// checkInvariants holds, after a kill, what a crash may never break. It
// reads the store with the machine and plain SQL reads only, then opens
// the repository again (the "next open") and checks the apply.
func (sc *crashScenario) checkInvariants(t *testing.T, at string, open bool) {
	t.Helper()
	ctx := context.Background()
	st, err := OpenStore(ctx, filepath.Join(sc.base, "data"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.loadLifecycle(ctx, sc.repoRoot(t), sc.id)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	// The journal replays to the projection.
	s := lifecycle.State{}
	committed := map[string]string{} // invocation → payload digest
	for _, e := range l.Journal {
		ev, err := decodeLifecycleEvent(e.Kind, []byte(e.Payload))
		if err != nil || lifecycle.EventDigest(ev) != e.PayloadDigest || e.PrevDigest != s.Digest() {
			t.Errorf("after a kill at %s: event %d does not check (%v)", at, e.Seq, err)
			break
		}
		if s, _, err = stepLifecycle(s, ev); err != nil || s.Digest() != e.StateDigest {
			t.Errorf("after a kill at %s: event %d does not replay (%v)", at, e.Seq, err)
			break
		}
		if inv := invocationOf(ev); inv != "" {
			if _, dup := committed[inv]; dup {
				t.Errorf("after a kill at %s: invocation %s committed twice", at, inv)
			}
			committed[inv] = e.PayloadDigest
		}
	}
	if string(s.Canonical()) != l.State || s.Digest() != l.StateDigest || l.Seq != s.Seq {
		t.Errorf("after a kill at %s: the journal does not replay to the projection", at)
	}
	// Every committed worker event has its artifact; only the pending
	// invocation may have an artifact not yet committed.
	pending := ""
	if inv, ok := lifecycle.Pending(s)[0].(lifecycle.Invoke); ok {
		pending = inv.Invocation
	}
	arts, err := st.lifecycleArtifacts(ctx, sc.id)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, a := range arts {
		stored[a.Invocation] = true
		digest, ok := committed[a.Invocation]
		switch {
		case ok && digest != lifecycle.EventDigest(a.Event):
			t.Errorf("after a kill at %s: the committed event of %s is not its artifact's", at, a.Invocation)
		case !ok && a.Invocation != pending:
			t.Errorf("after a kill at %s: a loose artifact of %s %d (pending is %s)", at, a.Phase, a.Attempt, pending)
		}
	}
	for inv := range committed {
		if !stored[inv] {
			t.Errorf("after a kill at %s: invocation %s committed without a persisted artifact", at, inv)
		}
	}
	// No side effect twice, none for an invocation neither committed nor
	// pending.
	if _, err := os.Stat(filepath.Join(sc.base, "effects", "DUPLICATES")); err == nil {
		t.Errorf("after a kill at %s: a side effect happened twice: %s", at, MustReadFile(t, filepath.Join(sc.base, "effects", "DUPLICATES")))
	}
	effects, _ := filepath.Glob(filepath.Join(sc.base, "effects", "*.*"))
	for _, e := range effects {
		prefix, _, _ := strings.Cut(filepath.Base(e), ".")
		// Every side effect was preceded by the committed record of its
		// start: none can happen unseen.
		var starts int
		if err := st.db.QueryRowContext(ctx, `SELECT count(*) FROM invocation_runs WHERE substr(invocation, 4, 24) = ? AND part = 0 AND event = 'started'`,
			prefix).Scan(&starts); err != nil || starts != 1 {
			t.Errorf("after a kill at %s: side effect %s has %d recorded starts (%v), want 1", at, filepath.Base(e), starts, err)
		}
		known := strings.HasPrefix(strings.TrimPrefix(pending, "b3:"), prefix)
		for inv := range committed {
			known = known || strings.HasPrefix(strings.TrimPrefix(inv, "b3:"), prefix)
		}
		if !known {
			t.Errorf("after a kill at %s: side effect %s belongs to no committed or pending invocation", at, filepath.Base(e))
		}
	}
	// The change's repair reservation is the lifecycle's.
	var repairs int
	err = st.db.QueryRowContext(ctx, `SELECT repairs_used FROM changes WHERE change_id = ?`, s.Freeze.ChangeID).Scan(&repairs)
	if err == nil && repairs != s.RepairsUsed {
		t.Errorf("after a kill at %s: changes.repairs_used %d, the lifecycle's %d", at, repairs, s.RepairsUsed)
	}
	st.Close()
	if open {
		sc.checkApply(t, at)
	}
}

// checkApply opens the repository again (which recovers an interrupted
// apply) and holds the tree to all or nothing, as the journal says.
func (sc *crashScenario) checkApply(t *testing.T, at string) {
	t.Helper()
	ctx := context.Background()
	te := &testEngine{tb: t, repo: filepath.Join(sc.base, "repo"), data: filepath.Join(sc.base, "data")}
	te.reopen()
	defer te.Close()
	rows, err := te.store.applies(ctx, te.root, "", false)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	for _, r := range rows {
		switch r.Status {
		case "intent":
			t.Errorf("after a kill at %s and a new open: apply %d is still open", at, r.ApplyID)
		case "done":
			done = true
		}
	}
	tree := sc.touched(t)
	base := sc.templateTree(t)
	switch {
	case done && tree != sc.tree:
		t.Errorf("after a kill at %s: the journal says done, the tree is not the applied patch:\n%s", at, tree)
	case !done && tree != base:
		t.Errorf("after a kill at %s: no apply is done, the tree is not the base:\n%s", at, tree)
	}
	for _, name := range []string{"HEAD", "index"} {
		if got, want := MustReadFile(t, filepath.Join(sc.base, "repo", ".git", name)), MustReadFile(t, filepath.Join(sc.template, "repo", ".git", name)); !slices.Equal(got, want) {
			t.Errorf("after a kill at %s: .git/%s changed", at, name)
		}
	}
}

func (sc *crashScenario) templateTree(t *testing.T) string {
	var b strings.Builder
	for _, p := range crashFiles {
		data, err := os.ReadFile(filepath.Join(sc.template, "repo", p))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, "%s: -\n", p)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", p, digestOf(string(data)))
	}
	return b.String()
}

// invocationOf is the invocation a worker event answers ("" for the
// parent's own events).
func invocationOf(ev lifecycle.Event) string {
	switch ev := ev.(type) {
	case lifecycle.ExploreCompleted:
		return ev.Invocation
	case lifecycle.ImplementCompleted:
		return ev.Invocation
	case lifecycle.TestCompleted:
		return ev.Invocation
	case lifecycle.ReviewCompleted:
		return ev.Invocation
	case lifecycle.VerifyCompleted:
		return ev.Invocation
	case lifecycle.PhaseFailed:
		return ev.Invocation
	}
	return ""
}

// TestLifecycle_TwoChildRunners starts two `needle change run` processes
// on one lifecycle. The first holds the lifecycle (its lease) while its
// explore adapter waits at a FIFO; the second stops at once with exit 3,
// naming the first's pid, and commits nothing. Released, the first runs
// to the approval; the journal has exactly one event per seq.
func TestLifecycle_TwoChildRunners(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	sc := crashScenarios(t, probe)[0]
	sc.prepareOnly(t, t.TempDir())
	gate := filepath.Join(sc.base, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	sc.setGate(t, gate)

	args := []string{"change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id}
	first := needleCommand(t, args...)
	first.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"))
	var out strings.Builder
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Opening the FIFO for writing returns once the first runner opened it
	// for reading: it is inside its explore adapter, holding the lifecycle.
	w, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	second := needleCommand(t, args...)
	second.Env = first.Env
	got, err := second.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(got), fmt.Sprintf("is being run by pid %d", first.Process.Pid)) {
		t.Errorf("second runner: %v\n%s\nwant exit 3 naming pid %d", err, got, first.Process.Pid)
	}
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := first.Wait(); err != nil {
		t.Fatalf("first runner: %v\n%s", err, out.String())
	}
	l, v := sc.stored(t)
	if v.State.Status != lifecycle.StatusAwaitingApproval || len(l.Journal) != 6 {
		t.Errorf("after the runs: %s with %d events", v.State.Where(), len(l.Journal))
	}
}
