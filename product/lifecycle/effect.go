package product

import "fmt"

// The effects StepLifecycle asks of the parent, and its refusals.

// LifecycleEffect is one thing the parent must do after a transition. Only
// LifecycleConsumeRepair belongs inside the transition's transaction; the
// others are carried out after it committed and are exactly
// LifecyclePending of the new state.
type LifecycleEffect interface {
	fmt.Stringer
	lifecycleEffect()
}

// LifecycleInvoke asks the kernel to run one phase's adapter with this
// invocation id, under the role's frozen profile. The references are all
// the adapter may be given besides the frozen lifecycle: the patch to lay
// on a fresh checkout (for the repair: the patch it repairs), the test
// evidence a verifier judges with, and for the repair the verification
// whose instructions it follows. A verifier is never given the review or a
// patch worker's output.
type LifecycleInvoke struct {
	Phase        Phase
	Round        int
	Attempt      int
	Invocation   string
	Profile      LifecycleProfileRef
	Patch        string
	TestEvidence string
	RepairFrom   string
}

// LifecycleConsumeRepair is written in the same transaction as the
// transition that returns it: the change's one repair is consumed
// (changes.repairs_used) together with the lifecycle entering round 2, so
// neither a crash nor a second runner can buy another.
type LifecycleConsumeRepair struct {
	Change       string
	Verification string
}

// LifecycleAwaitApproval stops the kernel: the user must approve this
// binding (or cancel).
type LifecycleAwaitApproval struct {
	Binding LifecycleApprovalBinding
}

// LifecycleAwaitApply: the approval is recorded; the user's apply command
// takes it from here.
type LifecycleAwaitApply struct {
	Patch    string
	Approval string
}

// LifecycleWriteFiles asks the applier to write (or, after a crash, to
// finish or undo) the journaled apply intent.
type LifecycleWriteFiles struct {
	Intent string
}

// LifecycleDone: the lifecycle ended; nothing more will run.
type LifecycleDone struct {
	Status LifecycleStatus
	Reason LifecycleReason
}

func (LifecycleInvoke) lifecycleEffect()        {}
func (LifecycleConsumeRepair) lifecycleEffect() {}
func (LifecycleAwaitApproval) lifecycleEffect() {}
func (LifecycleAwaitApply) lifecycleEffect()    {}
func (LifecycleWriteFiles) lifecycleEffect()    {}
func (LifecycleDone) lifecycleEffect()          {}

func (e LifecycleInvoke) String() string {
	s := fmt.Sprintf("invoke %s round=%d attempt=%d invocation=%s profile=%s:%s@%d", e.Phase, e.Round, e.Attempt,
		e.Invocation, e.Profile.Role, e.Profile.Profile, e.Profile.Revision)
	for _, ref := range []struct{ name, id string }{{"patch", e.Patch}, {"test-evidence", e.TestEvidence}, {"repair-from", e.RepairFrom}} {
		if ref.id != "" {
			s += " " + ref.name + "=" + ref.id
		}
	}
	return s
}

func (e LifecycleConsumeRepair) String() string {
	return fmt.Sprintf("consume-repair change=%s verification=%s (in the transition's transaction)", e.Change, e.Verification)
}

func (e LifecycleAwaitApproval) String() string {
	return fmt.Sprintf("await-approval patch=%s verification=%s lifecycle=%s", e.Binding.Patch, e.Binding.Verification, e.Binding.Lifecycle)
}

func (e LifecycleAwaitApply) String() string {
	return fmt.Sprintf("await-apply patch=%s approval=%s", e.Patch, e.Approval)
}

func (e LifecycleWriteFiles) String() string { return "write-files intent=" + e.Intent }

func (e LifecycleDone) String() string { return fmt.Sprintf("done %s reason=%s", e.Status, e.Reason) }

// LifecycleRefusal says why StepLifecycle refused an event.
type LifecycleRefusal string

const (
	LifecycleRefusalInvalidPayload      LifecycleRefusal = "invalid_payload"      // the event breaks its own bounds or formats
	LifecycleRefusalIllegalTransition   LifecycleRefusal = "illegal_transition"   // this state does not accept this kind of event
	LifecycleRefusalTerminal            LifecycleRefusal = "terminal"             // the lifecycle has ended
	LifecycleRefusalStaleInvocation     LifecycleRefusal = "stale_invocation"     // not the current invocation of the running phase
	LifecycleRefusalWrongArtifact       LifecycleRefusal = "wrong_artifact"       // bound to another patch, profile, snapshot or evidence
	LifecycleRefusalInconsistentVerdict LifecycleRefusal = "inconsistent_verdict" // a verdict its own judgements contradict
	LifecycleRefusalApprovalMismatch    LifecycleRefusal = "approval_mismatch"    // an approval for older digests
	LifecycleRefusalIntentMismatch      LifecycleRefusal = "intent_mismatch"      // an apply step that is not the approved patch's
)

func (r LifecycleRefusal) String() string { return string(r) }

// kind is the Error kind of a refusal: a malformed event is invalid input,
// an event the state cannot take is a conflict.
func (r LifecycleRefusal) kind() Kind {
	if r == LifecycleRefusalInvalidPayload {
		return KindInvalidInput
	}
	return KindConflict
}

// LifecycleStepError is the cause of every refusal of StepLifecycle: what
// was refused, where, and why.
type LifecycleStepError struct {
	Code   LifecycleRefusal
	Phase  Phase
	Status LifecycleStatus
	Event  LifecycleEventKind
	Detail string
}

func (e *LifecycleStepError) Error() string {
	where := "no lifecycle"
	if e.Status != "" {
		where = string(e.Phase) + "/" + string(e.Status)
	}
	return fmt.Sprintf("%s refused in %s (%s): %s", e.Event, where, e.Code, e.Detail)
}

func stepErr(code LifecycleRefusal, format string, args ...any) *LifecycleStepError {
	return &LifecycleStepError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// refuse is a refusal of ev in s as the product's Error.
func refuse(s LifecycleState, ev LifecycleEventKind, code LifecycleRefusal, format string, args ...any) error {
	se := stepErr(code, format, args...)
	se.Phase, se.Status, se.Event = s.Phase, s.Status, ev
	return &Error{Op: "lifecycle.step", Kind: code.kind(), Err: se}
}
