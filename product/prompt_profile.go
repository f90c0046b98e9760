package product

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The prompt profile: what Needle sends its workers, as a versioned,
// digested profile. Each worker kind has a prompt set — its developer
// instructions, its turns' prompts and their output schemas, under the
// thread configuration every worker gets — and the profile is the sets of
// one revision. A prompt builder is code, so a set is digested by what it
// sends: its prompts rendered for a fixed sample request. The digest is of
// what is sent, never an input to it: a worker's invocation identity (and
// so the frozen transcripts the replay tier finds by it) does not change
// with it. TestPromptProfile_Revisions holds each revision to one digest:
// a change of what any worker is sent must bump PromptProfileRevision (and
// re-record the frozen transcripts).

// PromptProfileRevision is the revision of the worker prompts this Needle
// sends.
const PromptProfileRevision = 1

// The prompt sets, by the worker they brief.
const (
	PromptsEvidence = "evidence" // the evidence worker: one turn per missing obligation
	PromptsPatch    = "patch"    // the patch worker, and its one repair
	PromptsReview   = "review"   // the lifecycle's reviewer
	PromptsVerify   = "verify"   // the verifier (verify_change and the lifecycle's)
)

// promptSetNames are the prompt sets in order.
var promptSetNames = []string{PromptsEvidence, PromptsPatch, PromptsReview, PromptsVerify}

// PromptProfile is a revision of the worker prompts: its digest and each
// prompt set's.
type PromptProfile struct {
	Revision int               `json:"revision"`
	Digest   string            `json:"digest"`
	Sets     map[string]string `json:"sets"` // prompt set → its digest
}

// Ref spells the profile as sessions record it: "1 b3:…".
func (p PromptProfile) Ref() string { return fmt.Sprintf("%d %s", p.Revision, p.Digest) }

// promptSet is what one kind of worker is sent, for a sample invocation.
type promptSet struct {
	Name         string            `json:"name"`
	Instructions string            `json:"instructions"`
	Turns        []promptTurn      `json:"turns"`
	Thread       map[string]any    `json:"thread"` // thread/start settings every worker gets
	Schemas      []json.RawMessage `json:"schemas"`
}

// promptTurn is one turn's prompt as rendered for the sample request.
type promptTurn struct {
	Label  string `json:"label"`
	Prompt string `json:"prompt"`
}

// CurrentPromptProfile is the prompt profile of this Needle.
var CurrentPromptProfile = sync.OnceValue(func() PromptProfile {
	p := PromptProfile{Revision: PromptProfileRevision, Sets: map[string]string{}}
	for _, name := range promptSetNames {
		p.Sets[name] = mustID(tagPromptSet, promptSets()[name])
	}
	p.Digest = mustID(tagPromptProfile, struct {
		Revision int               `json:"revision"`
		Sets     map[string]string `json:"sets"`
	}{p.Revision, p.Sets})
	return p
})

// defaultRolePrompts is the prompt set each lifecycle role is briefed
// with; the test runner is no model and has none.
var defaultRolePrompts = map[lifecycle.Role]string{
	lifecycle.RoleExplorer:    PromptsEvidence,
	lifecycle.RoleImplementer: PromptsPatch,
	lifecycle.RoleReviewer:    PromptsReview,
	lifecycle.RoleVerifier:    PromptsVerify,
}

// promptSets renders every prompt set for the sample request.
var promptSets = sync.OnceValue(func() map[string]promptSet {
	thread := map[string]any{"approval_policy": "never", "config": workerTools, "ephemeral": true}
	sample := ChangeRequest{Task: "Sample task.", Criteria: []string{"Sample criterion one.", "Sample criterion two."},
		Scopes:      []PathScope{{Path: "a.go", Kind: ScopeExact}, {Path: "pkg", Kind: ScopeSubtree}},
		Constraints: ChangeConstraints{MaxFiles: 2, MaxBytes: 4096, Notes: []string{"sample note"}}}
	refs := []string{"implementation_location: a.go:1-2 [artifact b3:sample]"}
	files := []PatchFile{{PatchOperation: PatchOperation{Op: PatchModify, Path: "a.go", Bytes: 10}, Content: "package a\n"}}
	repair := &verificationRecord{Criteria: []CriterionVerdict{{Criterion: 2, Status: lifecycle.CriterionUnmet, Reason: "sample reason"}},
		Repair: "sample repair"}

	const inv = "b3:sample"
	evidence := promptSet{Name: PromptsEvidence, Instructions: threadInstructions("", inv), Thread: thread}
	ir := NeedIR{Route: RouteTraceStateFlow, Subject: Subject{Kind: SubjectCLIOption, Name: "--sample"}}
	req := WorkerRequest{NeedID: "b3:sample", IR: ir, Task: "Sample task."}
	for _, k := range allCapabilities {
		ob := Obligation{Kind: k, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}}
		evidence.Turns = append(evidence.Turns, promptTurn{Label: string(k), Prompt: workerPrompt(req, ob)})
		s, err := ProposalSchema(k)
		if err != nil {
			panic(fmt.Sprintf("product: the %s proposal schema: %v", k, err))
		}
		evidence.Schemas = append(evidence.Schemas, s)
	}
	return map[string]promptSet{
		PromptsEvidence: evidence,
		PromptsPatch: {Name: PromptsPatch, Instructions: threadInstructions(patchInstructions, inv), Thread: thread,
			Turns:   []promptTurn{{"patch", patchPrompt(sample, refs, nil)}, {"repair", patchPrompt(sample, refs, repair)}},
			Schemas: []json.RawMessage{patchReportSchema()}},
		PromptsReview: {Name: PromptsReview, Instructions: threadInstructions(reviewInstructions, inv), Thread: thread,
			Turns:   []promptTurn{{"review", reviewPrompt(ReviewRequest{Patch: files, Diff: "sample diff\n", Criteria: []string{"b3:sample"}})}},
			Schemas: []json.RawMessage{reviewSchema()}},
		PromptsVerify: {Name: PromptsVerify, Instructions: threadInstructions(verifyInstructions, inv), Thread: thread,
			Turns: []promptTurn{{"verify", verifyPrompt(sample, refs, []PatchOperation{files[0].PatchOperation})},
				{"lifecycle-verify", lifecycleVerifyPrompt(VerifyRequest{Request: sample, Patch: files, Context: refs,
					Tests: []TestLine{{Test: "TestSample", Command: "go test -run '^TestSample$' .", Outcome: lifecycle.TestPassed}}})}},
			Schemas: []json.RawMessage{verdictSchema()}},
	}
})

// checkPromptSet checks that a prompt set exists.
func checkPromptSet(op, path, name string) error {
	if !slices.Contains(promptSetNames, name) {
		return invalidf(op, path, "unknown prompt set %q; want one of %v", name, promptSetNames)
	}
	return nil
}
