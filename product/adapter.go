package product

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Lifecycle adapters: what the kernel invokes for each worker phase, with a
// bounded request built from the frozen lifecycle and a bounded result.
// Nothing an adapter returns is believed as it is: the kernel checks it and
// builds the completion event itself (completion), so an adapter can
// neither steer the machine nor smuggle unvalidated data into the journal.

// lifecycleAdapters are the injected adapters, one per worker phase. The
// engine's defaults run Codex App Server workers (explore, implement,
// review, verify) and Needle's own sandboxed test runner (test).
type lifecycleAdapters struct {
	Explore   func(context.Context, exploreRequest) (exploreResult, error)
	Implement func(context.Context, implementRequest) (implementResult, error)
	Test      func(context.Context, testRequest) (testResult, error)
	Review    func(context.Context, reviewRequest) (reviewResult, error)
	Verify    func(context.Context, verifyRequest) (verifierResult, error)
}

// AdapterCall is what every adapter request carries. Invocation is the
// deterministic id of this lifecycle, phase and attempt: an adapter may use
// it to find the side effects of an earlier, uncommitted run of the same
// attempt and not repeat them.
type AdapterCall struct {
	Lifecycle  string
	Invocation string
	Phase      lifecycle.Phase
	Round      int
	Attempt    int
	Profile    lifecycle.ProfileRef
	Role       roleSettings
	Root       string // the repository
	Snapshot   string // the frozen source snapshot
}

// exploreRequest asks the explorer for certified evidence of the change's
// needs.
type exploreRequest struct {
	AdapterCall
	Needs       []NeedRequest
	ArtifactIDs []string
	ClaimIDs    []string
}

// exploreResult is the explorer's evidence: artifact ids, each of which the
// kernel checks is certified and fresh, and what its evidence workers cost
// (Workers: how many it started; Usage: their tokens, summed).
type exploreResult struct {
	Evidence []string
	Usage    workerUsage
	Workers  int
	Thread   string
}

// repairBrief is what a repair is told of the verification it follows: the
// criteria not met and the repair instructions, never the verifier's
// transcript.
type repairBrief struct {
	Criteria     []criterionVerdict
	Instructions string
}

// implementRequest asks the implementer for a patch. In round 2 Laid is the
// patch being repaired (laid on the checkout first) and Repair what the
// verifier asked for.
type implementRequest struct {
	AdapterCall
	Request changeRequest
	Context []string // certified citation lines
	Laid    []patchFile
	Repair  *repairBrief
}

// implementResult is the patch Needle built from the implementer's checkout
// (cumulative against Base), or why it refused it (Rejected).
type implementResult struct {
	Base     string
	Patch    []patchFile
	Rejected []string
	Report   string // the worker's final message
	Usage    workerUsage
	Thread   string
}

// testRequest asks for the frozen test plans to be run on a fresh checkout
// with the patch laid on it.
type testRequest struct {
	AdapterCall
	Patch []patchFile
	Plans []lifecycleTestPlan
}

// testPlanRun is the run of one plan. A plan without a run is missing
// evidence; an error outcome is unavailable evidence: both fail closed.
type testPlanRun struct {
	Plan      string
	Outcome   lifecycle.TestOutcome
	Duration  time.Duration
	Output    []byte
	Truncated bool
	Detail    string
}

// testResult is the runs of the plans and what they depended on
// (Dependencies: nil when the adapter cannot tell; drift.go).
type testResult struct {
	Runs         []testPlanRun
	Dependencies *TestDependencies
	Usage        workerUsage
	Thread       string
}

// reviewRequest asks the reviewer, read-only, for findings on the current
// patch; it sees the criteria only as redacted digests.
type reviewRequest struct {
	AdapterCall
	Patch    []patchFile
	Diff     string
	Criteria []string
}

// reviewResult is the reviewer's final message (decoded by the kernel).
type reviewResult struct {
	Answer string
	Usage  workerUsage
	Thread string
}

// verifyRequest asks the distinct verifier, read-only, to judge the patched
// checkout against the criteria with the test evidence. It carries no
// review and nothing the implementer said.
type verifyRequest struct {
	AdapterCall
	Request changeRequest
	Patch   []patchFile
	Context []string
	Tests   []testLine
}

// testLine is one test plan's outcome as the verifier is told it.
type testLine struct {
	Test    string
	Command string
	Outcome lifecycle.TestOutcome
}

// verifierResult is the verifier's final message (judged by the kernel).
type verifierResult struct {
	Answer string
	Usage  workerUsage
	Thread string
}

// adapterError classifies an adapter failure for the machine.
type adapterError struct {
	Failure lifecycle.Failure
	Err     error
}

func (e *adapterError) Error() string { return string(e.Failure) + ": " + e.Err.Error() }
func (e *adapterError) Unwrap() error { return e.Err }

// recordedFailure is a failure returned from a record: its message is the
// original error's, its class the one the original was given.
type recordedFailure struct {
	Failure lifecycle.Failure
	Detail  string
}

func (e *recordedFailure) Error() string { return e.Detail }

// errFailClosed marks failures that must never be retried: a sandbox
// escape, a corrupt checkout, a cleanup that could not be verified.
var errFailClosed = errors.New("fail closed")

// failureOf classifies an adapter error: fail closed, timeout,
// unavailable, or (anything else) crashed.
func failureOf(err error) lifecycle.Failure {
	var ae *adapterError
	var rf *recordedFailure
	switch {
	case errors.As(err, &ae):
		return ae.Failure
	case errors.As(err, &rf):
		return rf.Failure
	case errors.Is(err, errFailClosed), errors.Is(err, checkout.ErrVerify):
		return lifecycle.FailureFailClosed
	case errors.Is(err, context.DeadlineExceeded):
		return lifecycle.FailureTimeout
	case KindOf(err) == kindUnavailable:
		return lifecycle.FailureUnavailable
	}
	return lifecycle.FailureCrashed
}

// boundedReasons bounds reasons as an event may carry them.
func boundedReasons(reasons []string) []string {
	out := []string{}
	for _, r := range reasons {
		if len(out) == lifecycle.MaxReasons {
			break
		}
		r = clip(strings.ToValidUTF8(strings.ReplaceAll(oneLine(r), "\x00", ""), ""), lifecycle.MaxTextBytes)
		if strings.TrimSpace(r) != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		out = []string{"the patch was rejected"}
	}
	return out
}

// reviewAnswer is a reviewer's final message.
type reviewAnswer struct {
	Findings []lifecycle.ReviewFinding `json:"findings"`
}

// decodeReview decodes a reviewer's answer strictly and bounds it.
func decodeReview(raw string, criteria int) ([]lifecycle.ReviewFinding, error) {
	var a reviewAnswer
	if err := decodeStrict([]byte(raw), &a); err != nil {
		return nil, fmt.Errorf("the reviewer's answer is malformed: %v", err)
	}
	if len(a.Findings) > lifecycle.MaxFindings {
		return nil, fmt.Errorf("the reviewer gave %d findings; the limit is %d", len(a.Findings), lifecycle.MaxFindings)
	}
	out := []lifecycle.ReviewFinding{}
	for i, f := range a.Findings {
		if !slices.Contains(lifecycle.FindingSeverities, f.Severity) || f.Criterion < 0 || f.Criterion > criteria {
			return nil, fmt.Errorf("finding %d names an unknown severity or criterion", i+1)
		}
		f.Summary = clip(strings.ToValidUTF8(strings.ReplaceAll(oneLine(f.Summary), "\x00", ""), ""), lifecycle.MaxTextBytes)
		if strings.TrimSpace(f.Summary) == "" {
			return nil, fmt.Errorf("finding %d has no summary", i+1)
		}
		out = append(out, f)
	}
	return out, nil
}
