package lifecycle

import "fmt"

// The effects Step asks of the parent, and its refusals.

// Effect is one thing the parent must do after a transition. Only
// ConsumeRepair belongs inside the transition's transaction; the
// others are carried out after it committed and are exactly
// Pending of the new state.
type Effect interface {
	fmt.Stringer
	lifecycleEffect()
}

// Invoke asks the kernel to run one phase's adapter with this
// invocation id, under the role's frozen profile. The references are all
// the adapter may be given besides the frozen lifecycle: the patch to lay
// on a fresh checkout (for the repair: the patch it repairs), the test
// evidence a verifier judges with, and for the repair the verification
// whose instructions it follows. A verifier is never given the review or a
// patch worker's output.
type Invoke struct {
	Phase        Phase
	Round        int
	Attempt      int
	Invocation   string
	Profile      ProfileRef
	Patch        string
	TestEvidence string
	RepairFrom   string
}

// ConsumeRepair is written in the same transaction as the
// transition that returns it: the change's one repair is consumed
// (changes.repairs_used) together with the lifecycle entering round 2, so
// neither a crash nor a second runner can buy another.
type ConsumeRepair struct {
	Change       string
	Verification string
}

// AwaitApproval stops the kernel: the user must approve this
// binding (or cancel).
type AwaitApproval struct {
	Binding ApprovalBinding
}

// AwaitApply: the approval is recorded; the user's apply command
// takes it from here.
type AwaitApply struct {
	Patch    string
	Approval string
}

// WriteFiles asks the applier to write (or, after a crash, to
// finish or undo) the journaled apply intent.
type WriteFiles struct {
	Intent string
}

// Done: the lifecycle ended; nothing more will run.
type Done struct {
	Status Status
	Reason Reason
}

func (Invoke) lifecycleEffect()        {}
func (ConsumeRepair) lifecycleEffect() {}
func (AwaitApproval) lifecycleEffect() {}
func (AwaitApply) lifecycleEffect()    {}
func (WriteFiles) lifecycleEffect()    {}
func (Done) lifecycleEffect()          {}

func (e Invoke) String() string {
	s := fmt.Sprintf("invoke %s round=%d attempt=%d invocation=%s profile=%s:%s@%d", e.Phase, e.Round, e.Attempt,
		e.Invocation, e.Profile.Role, e.Profile.Profile, e.Profile.Revision)
	for _, ref := range []struct{ name, id string }{{"patch", e.Patch}, {"test-evidence", e.TestEvidence}, {"repair-from", e.RepairFrom}} {
		if ref.id != "" {
			s += " " + ref.name + "=" + ref.id
		}
	}
	return s
}

func (e ConsumeRepair) String() string {
	return fmt.Sprintf("consume-repair change=%s verification=%s (in the transition's transaction)", e.Change, e.Verification)
}

func (e AwaitApproval) String() string {
	return fmt.Sprintf("await-approval patch=%s verification=%s lifecycle=%s", e.Binding.Patch, e.Binding.Verification, e.Binding.Lifecycle)
}

func (e AwaitApply) String() string {
	return fmt.Sprintf("await-apply patch=%s approval=%s", e.Patch, e.Approval)
}

func (e WriteFiles) String() string { return "write-files intent=" + e.Intent }

func (e Done) String() string { return fmt.Sprintf("done %s reason=%s", e.Status, e.Reason) }

// Refusal says why Step refused an event.
type Refusal string

const (
	RefusalInvalidPayload      Refusal = "invalid_payload"      // the event breaks its own bounds or formats
	RefusalIllegalTransition   Refusal = "illegal_transition"   // this state does not accept this kind of event
	RefusalTerminal            Refusal = "terminal"             // the lifecycle has ended
	RefusalStaleInvocation     Refusal = "stale_invocation"     // not the current invocation of the running phase
	RefusalWrongArtifact       Refusal = "wrong_artifact"       // bound to another patch, profile, snapshot or evidence
	RefusalInconsistentVerdict Refusal = "inconsistent_verdict" // a verdict its own judgements contradict
	RefusalApprovalMismatch    Refusal = "approval_mismatch"    // an approval for older digests
	RefusalIntentMismatch      Refusal = "intent_mismatch"      // an apply step that is not the approved patch's
)

func (r Refusal) String() string { return string(r) }

// StepError is the cause of every refusal of Step: what
// was refused, where, and why.
type StepError struct {
	Code   Refusal
	Phase  Phase
	Status Status
	Event  EventKind
	Detail string
}

func (e *StepError) Error() string {
	where := "no lifecycle"
	if e.Status != "" {
		where = string(e.Phase) + "/" + string(e.Status)
	}
	return fmt.Sprintf("%s refused in %s (%s): %s", e.Event, where, e.Code, e.Detail)
}

func stepErr(code Refusal, format string, args ...any) *StepError {
	return &StepError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// refuse is a refusal of ev in s.
func refuse(s State, ev EventKind, code Refusal, format string, args ...any) error {
	se := stepErr(code, format, args...)
	se.Phase, se.Status, se.Event = s.Phase, s.Status, ev
	return se
}
