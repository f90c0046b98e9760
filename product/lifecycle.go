package product

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/lifecycle"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// The change lifecycle as the runtime sees it: what starting one asks for,
// the certified test plans it freezes, and the safe views the CLI and the
// HTTP routes show. The machine (machine*.go) decides; the kernel
// (kernel.go) runs adapters and commits; the store (store_lifecycle.go)
// keeps the projection, the journal and the artifacts.

// Bounds and defaults of starting a lifecycle.
const (
	// maxLifecycleNeeds bounds the needs explore resolves.
	maxLifecycleNeeds = 4
	// defaultLifecycleTokens, defaultLifecycleWall and
	// defaultLifecycleRuns are the budget when the start names none.
	defaultLifecycleTokens = int64(2_000_000)
	defaultLifecycleWall   = 30 * time.Minute
	defaultLifecycleRuns   = 16
	// maxTestOutput bounds the output kept of one test run.
	maxTestOutput = 64 << 10
	// testPlanDeadline bounds one test plan's run.
	testPlanDeadline = 5 * time.Minute
)

// LifecycleStart asks for a new lifecycle: the change, the needs explore
// resolves for it, the certified focused_tests artifacts whose tests are
// its test plans, a budget and the role profile.
type LifecycleStart struct {
	Request   changeRequest    `json:"request"`
	Needs     []NeedRequest    `json:"needs"`
	TestPlans []string         `json:"test_plans"` // focused_tests artifact ids
	Budget    lifecycle.Budget `json:"budget"`     // zero fields take the defaults
	Profile   string           `json:"profile"`    // "" = default
}

// lifecycleTestPlan is one frozen certified test plan: a test that
// certified focused_tests evidence names, and where Needle runs it. The
// command is derived by Needle from these fields, never copied from a
// worker.
type lifecycleTestPlan struct {
	ID       string `json:"plan_id"`
	Artifact string `json:"artifact_id"`
	Module   string `json:"module"`  // the module's directory, relative to the root ("." for the root)
	Package  string `json:"package"` // "." or "./rel", relative to Module
	Test     string `json:"test"`
}

func newTestPlan(artifact, module, pkg, test string) lifecycleTestPlan {
	p := lifecycleTestPlan{Artifact: artifact, Module: module, Package: pkg, Test: test}
	p.ID = mustID(tagTestPlan, struct {
		Artifact string `json:"artifact_id"`
		Module   string `json:"module"`
		Package  string `json:"package"`
		Test     string `json:"test"`
	}{artifact, module, pkg, test})
	return p
}

// Command is the command the plan runs, in its module's directory.
func (p lifecycleTestPlan) Command() string {
	return fmt.Sprintf("go test -count=1 -run '%s' %s", testrun.RunPattern(p.Test), p.Package)
}

// testPackage maps a test file to its plan's module and package, given the
// directories of the repository holding a go.mod.
func testPackage(testFile string, modules map[string]bool) (module, pkg string, ok bool) {
	dir := path.Dir(testFile)
	for d := dir; ; d = path.Dir(d) {
		if modules[d] {
			rel := strings.TrimPrefix(strings.TrimPrefix(dir, d), "/")
			if d == "." {
				rel = dir
			}
			if rel == "." || rel == "" {
				return d, ".", true
			}
			return d, "./" + rel, true
		}
		if d == "." || d == "/" {
			return "", "", false
		}
	}
}

// lifecycleRequestID is the freeze's request id: the change request and the
// needs explore resolves, together.
func lifecycleRequestID(req changeRequest, needs []NeedRequest) string {
	return mustID(tagLifecycleRequest, struct {
		Request changeRequest `json:"request"`
		Needs   []NeedRequest `json:"needs"`
	}{req, needs})
}

// criterionDigest is a redacted acceptance criterion: what the reviewer
// and the machine see of it.
func criterionDigest(i int, text string) string {
	return mustID(tagCriterion, struct {
		Criterion int    `json:"criterion"`
		Text      string `json:"text"`
	}{i + 1, text})
}

// roleRef is the frozen reference of a role's settings in a profile
// revision.
func roleRef(rev ProfileRevision, role lifecycle.Role) lifecycle.ProfileRef {
	r := rev.Profile.effectiveRoles().role(role)
	return lifecycle.ProfileRef{Role: role, Profile: rev.ID, Revision: rev.Revision, Sandbox: r.Sandbox,
		Digest: mustID(tagRoleSettings, struct {
			Role lifecycle.Role `json:"role"`
			roleSettings
		}{role, r}), Worker: roleWorker(role, r)}
}

// LifecycleIDs are the ids a command may name a lifecycle by: its own
// (lcy_…) or its change's (chg_…).
var lifecycleOrChange = lazyregexp.New(`^(lcy|chg)_[0-9a-f]{24}$`)

func newLifecycleID() string { return "lcy_" + randomHex() }

// The safe views of a lifecycle. They are built from the replayed journal
// and the artifacts it cites, never by serializing stored records: no raw
// worker output, no host-local path, no blob.

// lifecycleStatusCorrupt marks, in a listing only, a lifecycle whose
// stored records do not check (a kindIntegrity error): it is never a
// state of the machine, and nothing runs, approves or applies it.
const lifecycleStatusCorrupt lifecycle.Status = "corrupt"

// LifecycleSummary is one lifecycle in a list. A lifecycle that does not
// check is listed with its ids, status corrupt and what does not check
// (Corrupt); its other fields are zero.
type LifecycleSummary struct {
	ID          string           `json:"lifecycle_id"`
	ChangeID    string           `json:"change_id"`
	Task        string           `json:"task"`
	Phase       lifecycle.Phase  `json:"phase"`
	Status      lifecycle.Status `json:"status"`
	Reason      lifecycle.Reason `json:"reason"`
	Round       int              `json:"round"`
	RepairsUsed int              `json:"repairs_used"`
	Seq         int              `json:"seq"`
	StateDigest string           `json:"state_digest"`
	Usage       lifecycle.Usage  `json:"usage"`
	Budget      lifecycle.Budget `json:"budget"`
	CreatedAt   string           `json:"created_at"`
	UpdatedAt   string           `json:"updated_at"`
	Corrupt     string           `json:"corrupt,omitempty"`
}

// corruptSummary lists a lifecycle that does not check: its ids, where it
// stands in the list, and the integrity error.
func corruptSummary(ref lifecycleRef, err error) LifecycleSummary {
	return LifecycleSummary{ID: ref.ID, ChangeID: ref.ChangeID, Status: lifecycleStatusCorrupt, CreatedAt: ref.CreatedAt,
		UpdatedAt: ref.UpdatedAt, Corrupt: clip(oneLine(err.Error()), 512)}
}

// LifecycleDetail is one lifecycle in full.
type LifecycleDetail struct {
	LifecycleSummary
	Criteria     []lifecycleCriterionView   `json:"criteria"`
	Scopes       []pathScope                `json:"scopes"`
	Profiles     []lifecycle.ProfileRef     `json:"profiles"`
	Evidence     []string                   `json:"evidence"`
	TestPlans    []lifecycleTestPlanView    `json:"test_plans"`
	Patch        *lifecyclePatchView        `json:"patch"`
	Review       *lifecycleReviewView       `json:"review"`
	Verification *lifecycleVerificationView `json:"verification"`
	// AwaitingApproval is the binding the user approves, while the
	// lifecycle waits for it; ApprovalID the approval once granted.
	AwaitingApproval *lifecycle.ApprovalBinding `json:"awaiting_approval"`
	ApprovalID       string                     `json:"approval_id"`
	Apply            *applyView                 `json:"apply"`
	// Next says what the user can do next, as a command.
	Next string `json:"next"`
}

// lifecycleCriterionView is one acceptance criterion.
type lifecycleCriterionView struct {
	Criterion int    `json:"criterion"`
	Text      string `json:"text"`
	Digest    string `json:"digest"`
}

// lifecycleTestPlanView is one frozen test plan with the current patch's
// result, when there is one.
type lifecycleTestPlanView struct {
	PlanID       string                `json:"plan_id"`
	Test         string                `json:"test"`
	Module       string                `json:"module"`
	Command      string                `json:"command"`
	Outcome      lifecycle.TestOutcome `json:"outcome"` // "" before the test phase ran
	DurationMs   int64                 `json:"duration_ms"`
	OutputDigest string                `json:"output_digest"`
	// Detail says why a plan's outcome is error: what kept Needle from
	// running the test (no codex, a sandbox that failed its self-test, no
	// Go toolchain, a deadline).
	Detail string `json:"detail,omitempty"`
}

// lifecyclePatchView is the patch in force.
type lifecyclePatchView struct {
	PatchID    string           `json:"patch_id"`
	Round      int              `json:"round"`
	Files      int              `json:"files"`
	Bytes      int              `json:"bytes"`
	Operations []PatchOperation `json:"operations"`
}

// lifecycleReviewView is the review of the patch in force.
type lifecycleReviewView struct {
	ReviewID string                    `json:"review_id"`
	Findings []lifecycle.ReviewFinding `json:"findings"`
}

// lifecycleVerificationView is the verification of the patch in force (or
// the one that ended the lifecycle).
type lifecycleVerificationView struct {
	VerificationID     string             `json:"verification_id"`
	Verdict            lifecycle.Verdict  `json:"verdict"`
	Criteria           []criterionVerdict `json:"criteria"`
	RepairInstructions string             `json:"repair_instructions"`
	Reasons            []string           `json:"reasons"`
}

// applyView is the newest apply of a change, from its journal.
type applyView struct {
	IntentID string   `json:"intent_id"`
	Status   string   `json:"status"` // intent | done | rolled_back
	Cause    string   `json:"cause"`  // drift | crash_recovered | io, when rolled back
	Paths    []string `json:"paths"`
}

// lifecycleEventView is one event of the journal, as it may be shown.
type lifecycleEventView struct {
	Seq           int                 `json:"seq"`
	Kind          lifecycle.EventKind `json:"kind"`
	At            string              `json:"at"`
	PayloadDigest string              `json:"payload_digest"`
	StateDigest   string              `json:"state_digest"`
	Phase         lifecycle.Phase     `json:"phase"`  // after the event
	Status        lifecycle.Status    `json:"status"` // after the event
	Summary       string              `json:"summary"`
	// Detail is a failed phase's failure as its worker run reported it:
	// the App Server's message, or why the worker's answer was refused,
	// which may quote it. Unverified; shown labelled so, never in Summary.
	Detail string `json:"detail,omitempty"`
}

// eventSummary is a one-line description of an event: ids, counts and
// outcomes, never worker prose (a failure's detail is eventDetail).
func eventSummary(ev lifecycle.Event) string {
	switch ev := ev.(type) {
	case lifecycle.Created:
		return fmt.Sprintf("created change %s with %d test plan(s)", ev.Freeze.ChangeID, len(ev.Freeze.TestPlans))
	case lifecycle.ExploreCompleted:
		return fmt.Sprintf("explored: %d certified artifact(s)", len(ev.Evidence))
	case lifecycle.ImplementCompleted:
		if ev.Outcome == lifecycle.PatchRejected {
			return fmt.Sprintf("patch rejected: %d reason(s)", len(ev.Reasons))
		}
		return fmt.Sprintf("patch %s: %d file(s), %d bytes", ev.Patch, ev.Files, ev.Bytes)
	case lifecycle.TestCompleted:
		n := map[lifecycle.TestOutcome]int{}
		for _, r := range ev.Evidence.Results {
			n[r.Outcome]++
		}
		return fmt.Sprintf("tests: %d passed, %d failed, %d error", n[lifecycle.TestPassed], n[lifecycle.TestFailed], n[lifecycle.TestError])
	case lifecycle.ReviewCompleted:
		return fmt.Sprintf("review %s: %d finding(s)", ev.Review.ID(), len(ev.Review.Findings))
	case lifecycle.VerifyCompleted:
		return fmt.Sprintf("verification %s: %s", ev.Verification.ID(), ev.Verification.Outcome)
	case lifecycle.PhaseFailed:
		return fmt.Sprintf("%s failed (%s)", ev.Phase, ev.Failure)
	case lifecycle.ApprovalGranted:
		return fmt.Sprintf("approved patch %s", ev.Binding.Patch)
	case lifecycle.ApplyStarted:
		return fmt.Sprintf("apply started: intent %s, %d file(s)", ev.Intent.ID(), len(ev.Intent.Files))
	case lifecycle.ApplyConflicted:
		return fmt.Sprintf("apply refused (409): %s changed since the patch was made", strings.Join(ev.Paths, ", "))
	case lifecycle.ApplyCompleted:
		if ev.Recovered {
			return fmt.Sprintf("applied %d file(s) (finished by recovery)", ev.Files)
		}
		return fmt.Sprintf("applied %d file(s)", ev.Files)
	case lifecycle.ApplyRolledBack:
		return fmt.Sprintf("apply rolled back (%s)", ev.Cause)
	case lifecycle.CancelRequested:
		if ev.Note != "" { // the user's words, as they cancelled (or rejected in the UI)
			return "cancelled: " + strconv.Quote(ev.Note)
		}
		return "cancelled"
	}
	return string(ev.Kind())
}

// eventDetail is what an event carries that Needle did not write: a failed
// phase's detail, on one line.
func eventDetail(ev lifecycle.Event) string {
	if f, ok := ev.(lifecycle.PhaseFailed); ok {
		return oneLine(f.Detail)
	}
	return ""
}
