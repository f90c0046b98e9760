// Package lifecycle is the change lifecycle machine: an opt-in, depth-one state machine that
// takes a change through exactly this worker order
//
//	explore -> implement -> test -> review -> verify -> apply
//
// Step is pure, in the manner of etcd raft's Step: it takes the
// state and one event and returns the next state and the effects the
// parent must carry out, or a typed refusal that leaves the state as it
// was. It reads no clock, file, database or network (TestMachine_Pure holds that
// line), so replaying the journal of accepted
// events from the zero state always rebuilds the same state, byte for byte
// in its canonical encoding, and so the same state digest.
//
// The parent (the execution kernel) is the only transition authority. A
// worker's completion is typed, bounded data: it names the invocation it
// answers and what the worker produced, never a phase, a worker to start or
// a transition; the machine alone decides what follows. Each phase runs one
// adapter at a time (concurrency one) and no adapter can start another
// (depth one). The effects come in two kinds: ConsumeRepair must
// be written in the same SQLite transaction as the transition that returns
// it; every other effect is carried out only after that transaction
// committed (the driver persists before it acts). The effects after commit
// are always Pending of the new state, so a parent that crashed
// after a commit finds what to do next by replaying the journal.
//
// Status and phase together say where a lifecycle is:
//
//	explore..verify / running   the phase's adapter is to run (or running)
//	apply / awaiting_approval   verified; the kernel stops for the user
//	apply / approved            an approval bound to the patch, the
//	                            verification and the lifecycle digest
//	apply / applying            the apply intent is journaled; files move
//	any / applied, rejected, inconclusive, failed, cancelled  (terminal)
//
// Terminal outcomes and their reasons:
//
//	applied       applied                    every file of the patch written
//	rejected      patch_rejected             the first patch broke a rule (scope, …)
//	              repair_rejected            the repair patch broke one or changed nothing
//	              verification_rejected      the verifier rejected the approach
//	              repair_exhausted           repairable again after the one repair
//	inconclusive  verification_inconclusive  the verifier could not tell
//	failed        test_evidence_missing      a frozen test plan has no result
//	              test_evidence_unavailable  a frozen test plan could not run
//	              worker_failed              an adapter failed twice in one phase
//	              fail_closed                sandbox escape, checkout corruption,
//	                                         unverifiable cleanup: never retried
//	              budget_exhausted           tokens, wall time or worker runs spent
//	cancelled     cancelled                  the user cancelled
//
// Missing or unavailable test evidence fails closed: it ends the lifecycle,
// it never counts as passing, and a verification that says verified while
// a test failed is refused. A lifecycle holds exactly one repair
// reservation: the first repairable verdict consumes it (round 2 runs
// implement, test, review and verify again) and a second repairable verdict
// ends the lifecycle. The budget is cumulative over every adapter run and
// is checked before each one; a run in flight is never cut short by it.
package lifecycle
