package lifecycle

import (
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/enum"
	"github.com/needle-dev/needle/product/internal/safetext"
)

// The lifecycle state, its canonical encoding and its digest. The state is
// plain data: ids, digests and counters, never free text a worker wrote
// (that stays in the artifacts the ids name). Its canonical JSON (sorted
// keys, no insignificant white space, NFC strings: contentid.Canonical) is
// what change_lifecycles stores, and its content id under
// "needle.lifecycle_state.v1" is the state digest: the compare-and-swap
// token of a transition and the lifecycle digest an approval is bound to.
// Seq counts the events applied, so every transition changes the digest,
// even one that leaves everything else as it was.

// Role is a worker role a lifecycle freezes a profile for.
type Role string

const (
	RoleExplorer    Role = "explorer"
	RoleImplementer Role = "implementer"
	RoleTestRunner  Role = "test_runner"
	RoleReviewer    Role = "reviewer"
	RoleVerifier    Role = "verifier"
)

// Roles is the order of a freeze's profiles (the phase order).
var Roles = []Role{RoleExplorer, RoleImplementer, RoleTestRunner,
	RoleReviewer, RoleVerifier}

func (r Role) String() string { return string(r) }

// RoleSandbox is the one sandbox each role may run in. Only the
// implementer and the test runner write, and only inside their disposable
// checkout; the explorer, the reviewer and the verifier are read-only.
var RoleSandbox = map[Role]string{
	RoleExplorer:    "read-only",
	RoleImplementer: "workspace-write",
	RoleTestRunner:  "workspace-write",
	RoleReviewer:    "read-only",
	RoleVerifier:    "read-only",
}

// ProfileRef is the profile revision a role runs with, frozen at
// creation. Digest is the content id of the role's settings (role,
// sandbox, model, effort), so two roles never share one; Worker is the
// content id of the same settings without the role's name, and with the
// prompt set the role is briefed with (roleWorker): two roles with one
// Worker are one worker. A lifecycle created before Worker existed has none.
type ProfileRef struct {
	Role     Role   `json:"role"`
	Profile  string `json:"profile_id"`
	Revision int    `json:"revision"`
	Sandbox  string `json:"sandbox"`
	Digest   string `json:"digest"`
	Worker   string `json:"worker,omitempty"`
}

func (r ProfileRef) validate(p string) error {
	switch {
	case !slices.Contains(Roles, r.Role):
		return fmt.Errorf("%s.role: unknown role %q; want one of %s", p, safetext.Clip(string(r.Role), 80), enum.List(Roles))
	case !ProfileIDPattern.MatchString(r.Profile):
		return fmt.Errorf("%s.profile_id: malformed profile id %q", p, safetext.Clip(r.Profile, 80))
	case r.Revision < 1:
		return fmt.Errorf("%s.revision: want a revision from 1, got %d", p, r.Revision)
	case r.Sandbox != RoleSandbox[r.Role]:
		return fmt.Errorf("%s.sandbox: the %s runs %s, not %q", p, r.Role, RoleSandbox[r.Role], safetext.Clip(r.Sandbox, 80))
	}
	if r.Worker != "" {
		if err := checkID(p+".worker", r.Worker); err != nil {
			return err
		}
	}
	return checkID(p+".digest", r.Digest)
}

// Budget is a lifecycle's cumulative budget over all its adapter
// runs. Each dimension must be positive.
type Budget struct {
	Tokens     int64 `json:"tokens"`
	WallMs     int64 `json:"wall_ms"`
	WorkerRuns int   `json:"worker_runs"`
}

// Usage is what a lifecycle spent so far.
type Usage struct {
	Tokens     int64 `json:"tokens"`
	WallMs     int64 `json:"wall_ms"`
	WorkerRuns int   `json:"worker_runs"`
	// ExtraRuns are the worker runs beyond one per adapter run (explore's
	// further evidence workers), already in WorkerRuns: attempts and runs
	// stay accountable to each other. Omitted when none.
	ExtraRuns int `json:"extra_runs,omitempty"`
}

// exhausts reports whether usage leaves no room for another worker run.
func (u Usage) exhausts(b Budget) bool {
	return u.WorkerRuns >= b.WorkerRuns || u.Tokens >= b.Tokens || u.WallMs >= b.WallMs
}

// Freeze is what a lifecycle freezes at creation and never
// changes: the change, its request and source snapshot, the redacted
// acceptance-criterion digests, each role's profile revision, the sorted
// certified test plans, the budget and the concurrency (always one).
type Freeze struct {
	ChangeID    string       `json:"change_id"`
	RequestID   string       `json:"request_id"`
	Snapshot    string       `json:"snapshot"`
	Criteria    []string     `json:"criteria"`
	Profiles    []ProfileRef `json:"profiles"` // one per role, in role order
	TestPlans   []string     `json:"test_plans"`
	Budget      Budget       `json:"budget"`
	Concurrency int          `json:"concurrency"`
}

func (f Freeze) validate() error {
	const p = "freeze"
	if !ChangeIDPattern.MatchString(f.ChangeID) {
		return fmt.Errorf("%s.change_id: malformed change id %q; want chg_<24 hex>", p, safetext.Clip(f.ChangeID, 80))
	}
	if err := firstErr(checkID(p+".request_id", f.RequestID), checkID(p+".snapshot", f.Snapshot),
		checkCriteria(p+".criteria", f.Criteria)); err != nil {
		return err
	}
	if len(f.Profiles) != len(Roles) {
		return fmt.Errorf("%s.profiles: want one profile per role (%s), got %d", p, enum.List(Roles), len(f.Profiles))
	}
	for i, r := range f.Profiles {
		q := fmt.Sprintf("%s.profiles[%d]", p, i)
		if err := r.validate(q); err != nil {
			return err
		}
		if r.Role != Roles[i] {
			return fmt.Errorf("%s.role: want %s here, got %s", q, Roles[i], r.Role)
		}
	}
	// The verifier must be another worker than the implementer and the
	// reviewer: compared without the roles' names (Worker), which alone
	// would tell any two roles apart.
	v := f.Profile(RoleVerifier)
	for _, other := range []Role{RoleImplementer, RoleReviewer} {
		o := f.Profile(other)
		if v.Digest == o.Digest || (v.Worker != "" || o.Worker != "") && v.Worker == o.Worker {
			return fmt.Errorf("%s.profiles: the verifier must be a distinct profile, not the %s's: same sandbox, model, effort and prompts", p, other)
		}
	}
	// Missing test evidence fails closed from the start: a lifecycle
	// without a certified test plan could never be verified.
	if len(f.TestPlans) == 0 {
		return fmt.Errorf("%s.test_plans: no certified test plan; a lifecycle needs tests to run", p)
	}
	if err := checkIDList(p+".test_plans", f.TestPlans, 1, MaxTestPlans); err != nil {
		return err
	}
	b := f.Budget
	switch {
	case b.Tokens < 1 || b.Tokens > MaxTokens:
		return fmt.Errorf("%s.budget.tokens: want 1 to %d, got %d", p, MaxTokens, b.Tokens)
	case b.WallMs < 1 || b.WallMs > MaxWallMs:
		return fmt.Errorf("%s.budget.wall_ms: want 1 to %d, got %d", p, MaxWallMs, b.WallMs)
	case b.WorkerRuns < 1 || b.WorkerRuns > MaxWorkerRuns:
		return fmt.Errorf("%s.budget.worker_runs: want 1 to %d, got %d", p, MaxWorkerRuns, b.WorkerRuns)
	case f.Concurrency != 1:
		return fmt.Errorf("%s.concurrency: a lifecycle runs one worker at a time, not %d", p, f.Concurrency)
	}
	return nil
}

// profile returns the frozen profile of a role (zero if there is none).
func (f Freeze) Profile(role Role) ProfileRef {
	for _, r := range f.Profiles {
		if r.Role == role {
			return r
		}
	}
	return ProfileRef{}
}

func (f Freeze) clone() Freeze {
	f.Criteria = slices.Clone(f.Criteria)
	f.Profiles = slices.Clone(f.Profiles)
	f.TestPlans = slices.Clone(f.TestPlans)
	return f
}

// Attempts counts the invocations issued per worker phase. The
// attempt number is part of each invocation id.
type Attempts struct {
	Explore   int `json:"explore"`
	Implement int `json:"implement"`
	Test      int `json:"test"`
	Review    int `json:"review"`
	Verify    int `json:"verify"`
}

// of returns the counter of a worker phase (a scratch counter for apply,
// which invokes no adapter).
func (a *Attempts) of(p Phase) *int {
	switch p {
	case PhaseExplore:
		return &a.Explore
	case PhaseImplement:
		return &a.Implement
	case PhaseTest:
		return &a.Test
	case PhaseReview:
		return &a.Review
	case PhaseVerify:
		return &a.Verify
	}
	return new(int)
}

func (a Attempts) total() int { return a.Explore + a.Implement + a.Test + a.Review + a.Verify }

// PatchRef is the patch in force.
type PatchRef struct {
	ID    string `json:"patch_id"`
	Files int    `json:"files"`
	Bytes int    `json:"bytes"`
}

// TestSummary is the test evidence of the patch in force.
type TestSummary struct {
	Evidence string `json:"evidence_id"`
	Passed   int    `json:"passed"`
	Failed   int    `json:"failed"`
	Errors   int    `json:"errors"`
	Missing  int    `json:"missing"`
}

// VerificationRef is the verification of the patch in force.
type VerificationRef struct {
	ID      string  `json:"verification_id"`
	Outcome Verdict `json:"outcome"`
}

// Prior is what the repair replaced: the first patch and the
// verification whose repair instructions round 2 follows.
type Prior struct {
	Patch        string `json:"patch_id"`
	Verification string `json:"verification_id"`
}

// State is a lifecycle's state: the projection change_lifecycles
// stores. The zero value is the state before creation; it accepts only
// Created.
type State struct {
	Lifecycle      string          `json:"lifecycle_id"`
	Seq            int             `json:"seq"`
	Freeze         Freeze          `json:"freeze"`
	Phase          Phase           `json:"phase"`
	Status         Status          `json:"status"`
	Reason         Reason          `json:"reason"`
	Round          int             `json:"round"`
	Attempts       Attempts        `json:"attempts"`
	Retries        int             `json:"retries"`
	RepairsUsed    int             `json:"repairs_used"`
	Usage          Usage           `json:"usage"`
	Evidence       []string        `json:"evidence"`
	Patch          PatchRef        `json:"patch"`
	Tests          TestSummary     `json:"tests"`
	Review         string          `json:"review_id"`
	Verification   VerificationRef `json:"verification"`
	Prior          Prior           `json:"prior"`
	Approval       string          `json:"approval_id"`
	ApplyIntent    string          `json:"apply_intent"`
	ApplyConflicts int             `json:"apply_conflicts"`
}

// Canonical is the state's canonical JSON, as change_lifecycles stores it.
func (s State) Canonical() []byte { return []byte(contentid.MustCanonical(s)) }

// Digest is the state digest: the content id of the canonical state.
func (s State) Digest() string { return contentid.MustOf(tagState, s) }

// encoded is the canonical state and its digest, encoding it once.
func (s State) Encoded() ([]byte, string) {
	c := s.Canonical()
	return c, contentid.OfBytes(tagState, c)
}

func (s State) clone() State {
	s.Freeze = s.Freeze.clone()
	s.Evidence = slices.Clone(s.Evidence)
	return s
}

// where names the state for messages: "verify/running", or "none" before
// creation.
func (s State) Where() string {
	if s.Status == "" {
		return "no lifecycle"
	}
	return string(s.Phase) + "/" + string(s.Status)
}

// DecodeState decodes a stored projection. The data must be the
// state's exact canonical encoding and the state must hold every invariant
// of the machine; anything else is KindInvalidInput (a corrupt row).
func DecodeState(data []byte) (State, error) {
	s, err := decodeCanonicalValue[State](data)
	if err == nil {
		err = s.check()
	}
	if err != nil {
		return State{}, invalidf("lifecycle.state", "", "%v", err)
	}
	return s, nil
}

// check verifies the invariants every state Step can reach holds,
// stated as facts about the state rather than as the steps that make it.
func (s State) check() error {
	if s.Status == "" {
		if contentid.MustCanonical(s) != contentid.MustCanonical(State{}) {
			return fmt.Errorf("a state without status must be the zero state")
		}
		return nil
	}
	if err := (Created{Lifecycle: s.Lifecycle, Freeze: s.Freeze}).validate(); err != nil {
		return err
	}
	if err := firstErr(checkEnum("status", s.Status, statuses), checkEnum("phase", s.Phase, Phases)); err != nil {
		return err
	}
	for _, check := range []func() error{s.checkProgress, s.checkCounters, s.checkArtifacts, s.checkOutcome} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkProgress: the status fits the phase, and the attempts fit both.
func (s State) checkProgress() error {
	atApply := s.Phase == PhaseApply
	switch s.Status {
	case StatusRunning:
		if atApply {
			return fmt.Errorf("apply runs no adapter")
		}
	case StatusAwaitingApproval, StatusApproved, StatusApplying, StatusApplied:
		if !atApply {
			return fmt.Errorf("%s belongs to the apply phase, not %s", s.Status, s.Phase)
		}
	}
	cur := slices.Index(Phases, s.Phase)
	a := s.Attempts
	for i, p := range Phases[:len(Phases)-1] {
		n := *a.of(p)
		switch {
		case n < 0:
			return fmt.Errorf("attempts.%s is negative", p)
		case i < cur && n == 0:
			return fmt.Errorf("phase %s is past but never ran", p)
		case i > cur && n != 0 && s.Round == 1:
			return fmt.Errorf("phase %s ran before %s in round 1", p, s.Phase)
		}
	}
	if s.Status == StatusRunning && *a.of(s.Phase) < 1 {
		return fmt.Errorf("%s is running without an attempt", s.Phase)
	}
	// Every issued attempt finished as a worker run (explore's perhaps as
	// several: ExtraRuns), except the one in flight while running, or the
	// one a cancellation cut off.
	inFlight := 0
	if s.Status == StatusRunning {
		inFlight = 1
	}
	runs := s.Usage.WorkerRuns - s.Usage.ExtraRuns
	cutOff := a.total() == runs+1 && s.Status == StatusCancelled && s.Phase != PhaseApply
	if a.total() != runs+inFlight && !cutOff {
		return fmt.Errorf("%d attempts issued, %d worker runs finished and %d in flight", a.total(), runs, inFlight)
	}
	if s.Usage.ExtraRuns > a.Explore*(MaxRunsPerPhase-1) {
		return fmt.Errorf("%d extra worker runs from %d explore attempts", s.Usage.ExtraRuns, a.Explore)
	}
	return nil
}

// checkCounters: rounds, the repair reservation, retries and usage.
func (s State) checkCounters() error {
	u, b := s.Usage, s.Freeze.Budget
	switch {
	case s.Seq < 1:
		return fmt.Errorf("seq %d; a created lifecycle has applied at least one event", s.Seq)
	case s.RepairsUsed < 0 || s.RepairsUsed > RepairReservations:
		return fmt.Errorf("repairs_used %d; the reservation is %d", s.RepairsUsed, RepairReservations)
	case s.Round != 1+s.RepairsUsed:
		return fmt.Errorf("round %d with %d repairs used", s.Round, s.RepairsUsed)
	case s.Retries < 0 || s.Retries > MaxRetries:
		return fmt.Errorf("retries %d; the limit is %d", s.Retries, MaxRetries)
	case u.Tokens < 0 || u.WallMs < 0 || u.WorkerRuns < 0 || u.ExtraRuns < 0 || u.ExtraRuns > u.WorkerRuns:
		return fmt.Errorf("negative usage")
	// The run that spends the budget still counts: before it there was
	// room (exhausts), and one run counts for at most
	// MaxRunsPerPhase, MaxTokens and MaxWallMs.
	case u.WorkerRuns >= b.WorkerRuns+MaxRunsPerPhase || u.WorkerRuns > 0 && u.Tokens > b.Tokens+MaxTokens ||
		u.WorkerRuns > 0 && u.WallMs > b.WallMs+MaxWallMs:
		return fmt.Errorf("usage %+v is beyond what budget %+v lets a lifecycle spend", u, b)
	case s.Status == StatusRunning && u.exhausts(b):
		return fmt.Errorf("an adapter was invoked with the budget spent")
	case s.ApplyConflicts < 0:
		return fmt.Errorf("negative apply_conflicts")
	}
	if err := checkIDList("evidence", s.Evidence, 0, MaxEvidence); err != nil {
		return err
	}
	if s.Round == 2 {
		return firstErr(checkID("prior.patch_id", s.Prior.Patch), checkID("prior.verification_id", s.Prior.Verification))
	}
	if s.Prior != (Prior{}) {
		return fmt.Errorf("round 1 has nothing prior")
	}
	return nil
}

// checkArtifacts: exactly the artifacts the phase has reached are set.
func (s State) checkArtifacts() error {
	at := func(ps ...Phase) bool { return slices.Contains(ps, s.Phase) }
	terminal := s.Status.Terminal()
	testEnded := s.Reason == ReasonTestEvidenceMissing || s.Reason == ReasonTestEvidenceUnavailable
	verdictEnded := at(PhaseVerify) && terminal && s.Verification.ID != ""
	checks := []struct {
		name string
		set  bool
		want bool
	}{
		{"patch", s.Patch.ID != "", at(PhaseTest, PhaseReview, PhaseVerify, PhaseApply)},
		{"test evidence", s.Tests.Evidence != "", at(PhaseReview, PhaseVerify, PhaseApply) || testEnded},
		{"review", s.Review != "", at(PhaseVerify, PhaseApply)},
		{"verification", s.Verification.ID != "", at(PhaseApply) || verdictEnded},
		{"apply intent", s.ApplyIntent != "", s.Status == StatusApplying || s.Status == StatusApplied},
	}
	for _, c := range checks {
		if c.set != c.want {
			return fmt.Errorf("%s is %s in %s", c.name, map[bool]string{true: "set", false: "missing"}[c.set], s.Where())
		}
	}
	if s.Patch.ID != "" {
		if err := checkID("patch.patch_id", s.Patch.ID); err != nil {
			return err
		}
		if s.Patch.Files < 1 || s.Patch.Files > MaxPatchFiles || s.Patch.Bytes < 0 || s.Patch.Bytes > MaxPatchBytes {
			return fmt.Errorf("patch %+v is out of bounds", s.Patch)
		}
	} else if s.Patch != (PatchRef{}) {
		return fmt.Errorf("patch counts without a patch")
	}
	if t := s.Tests; t.Evidence != "" {
		if t.Passed+t.Failed+t.Errors+t.Missing != len(s.Freeze.TestPlans) || min(t.Passed, t.Failed, t.Errors, t.Missing) < 0 {
			return fmt.Errorf("test summary %+v does not cover the %d frozen plans", t, len(s.Freeze.TestPlans))
		}
		if !testEnded && t.Errors+t.Missing > 0 {
			return fmt.Errorf("unavailable test evidence went past the test phase")
		}
	} else if s.Tests != (TestSummary{}) {
		return fmt.Errorf("test counts without test evidence")
	}
	if s.Verification.ID == "" && s.Verification.Outcome != "" {
		return fmt.Errorf("a verification outcome without a verification")
	}
	approved := s.Status == StatusApproved || s.Status == StatusApplying || s.Status == StatusApplied
	switch {
	case approved && s.Approval == "":
		return fmt.Errorf("%s without an approval", s.Status)
	case s.Approval != "" && !approved && !(s.Status == StatusCancelled && at(PhaseApply)):
		return fmt.Errorf("an approval in %s", s.Where())
	case s.ApplyConflicts > 0 && s.Approval == "":
		return fmt.Errorf("an apply conflict without an approval")
	}
	return nil
}

// checkOutcome: a terminal status has a reason of its own, reached in a
// phase where it can happen; verdicts agree with what follows them.
func (s State) checkOutcome() error {
	if !s.Status.Terminal() {
		if s.Reason != "" {
			return fmt.Errorf("reason %s while %s", s.Reason, s.Status)
		}
	} else if reasonStatus[s.Reason] != s.Status {
		return fmt.Errorf("reason %q does not end a lifecycle as %s", s.Reason, s.Status)
	}
	phaseOf := map[Reason][]Phase{
		ReasonApplied:                  {PhaseApply},
		ReasonPatchRejected:            {PhaseImplement},
		ReasonRepairRejected:           {PhaseImplement},
		ReasonVerificationRejected:     {PhaseVerify},
		ReasonRepairExhausted:          {PhaseVerify},
		ReasonVerificationInconclusive: {PhaseVerify},
		ReasonTestEvidenceMissing:      {PhaseTest},
		ReasonTestEvidenceUnavailable:  {PhaseTest},
		ReasonWorkerFailed:             {PhaseExplore, PhaseImplement, PhaseTest, PhaseReview, PhaseVerify},
		ReasonFailClosed:               {PhaseExplore, PhaseImplement, PhaseTest, PhaseReview, PhaseVerify},
		ReasonBudgetExhausted:          {PhaseExplore, PhaseImplement, PhaseTest, PhaseReview, PhaseVerify},
		ReasonCancelled:                Phases,
	}
	if s.Reason != "" && !slices.Contains(phaseOf[s.Reason], s.Phase) {
		return fmt.Errorf("%s cannot happen in %s", s.Reason, s.Phase)
	}
	wantRound := map[Reason]int{ReasonPatchRejected: 1, ReasonRepairRejected: 2, ReasonRepairExhausted: 2}
	if r, ok := wantRound[s.Reason]; ok && s.Round != r {
		return fmt.Errorf("%s in round %d", s.Reason, s.Round)
	}
	if s.Verification.ID == "" {
		return nil
	}
	want := map[Reason]Verdict{
		ReasonVerificationRejected:     VerdictRejected,
		ReasonVerificationInconclusive: VerdictInconclusive,
		ReasonRepairExhausted:          VerdictRepairable,
		ReasonBudgetExhausted:          VerdictRepairable,
	}
	outcome, ok := want[s.Reason]
	if s.Phase == PhaseApply {
		outcome, ok = VerdictVerified, true
	}
	if !ok || s.Verification.Outcome != outcome {
		return fmt.Errorf("verification %s in %s (%s)", s.Verification.Outcome, s.Where(), s.Reason)
	}
	return nil
}
