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
// a change of what any worker is sent must bump promptProfileRevision (and
// re-record the frozen transcripts).

// promptProfileRevision is the revision of the worker prompts this Needle
// sends.
const promptProfileRevision = 1

// The prompt sets, by the worker they brief.
const (
	promptsEvidence = "evidence" // the evidence worker: one turn per missing obligation
	promptsPatch    = "patch"    // the patch worker, and its one repair
	promptsReview   = "review"   // the lifecycle's reviewer
	promptsVerify   = "verify"   // the verifier (verify_change and the lifecycle's)
)

// promptSetNames are the prompt sets in order.
var promptSetNames = []string{promptsEvidence, promptsPatch, promptsReview, promptsVerify}

// promptProfile is a revision of the worker prompts: its digest and each
// prompt set's.
type promptProfile struct {
	Revision int               `json:"revision"`
	Digest   string            `json:"digest"`
	Sets     map[string]string `json:"sets"` // prompt set → its digest
}

// Ref spells the profile as sessions record it: "1 b3:…".
func (p promptProfile) Ref() string { return fmt.Sprintf("%d %s", p.Revision, p.Digest) }

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

// currentPromptProfile is the prompt profile of this Needle.
var currentPromptProfile = sync.OnceValue(func() promptProfile {
	p := promptProfile{Revision: promptProfileRevision, Sets: map[string]string{}}
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
	lifecycle.RoleExplorer:    promptsEvidence,
	lifecycle.RoleImplementer: promptsPatch,
	lifecycle.RoleReviewer:    promptsReview,
	lifecycle.RoleVerifier:    promptsVerify,
}

// promptSets renders every prompt set for the sample request.
var promptSets = sync.OnceValue(func() map[string]promptSet {
	thread := map[string]any{"approval_policy": "never", "config": workerTools, "ephemeral": true}
	sample := changeRequest{Task: "Sample task.", Criteria: []string{"Sample criterion one.", "Sample criterion two."},
		Scopes:      []pathScope{{Path: "a.go", Kind: scopeExact}, {Path: "pkg", Kind: scopeSubtree}},
		Constraints: changeConstraints{MaxFiles: 2, MaxBytes: 4096, Notes: []string{"sample note"}}}
	refs := []string{"implementation_location: a.go:1-2 [artifact b3:sample]"}
	files := []patchFile{{PatchOperation: PatchOperation{Op: patchModify, Path: "a.go", Bytes: 10}, Content: "package a\n"}}
	repair := &verificationRecord{Criteria: []criterionVerdict{{Criterion: 2, Status: lifecycle.CriterionUnmet, Reason: "sample reason"}},
		Repair: "sample repair"}

	const inv = "b3:sample"
	evidence := promptSet{Name: promptsEvidence, Instructions: threadInstructions("", inv), Thread: thread}
	ir := needIR{Route: routeTraceStateFlow, Subject: Subject{Kind: subjectCLIOption, Name: "--sample"}}
	req := workerRequest{NeedID: "b3:sample", IR: ir, Task: "Sample task."}
	for _, k := range allCapabilities {
		ob := obligation{Kind: k, Strength: StrengthRequired, Facets: facets{Selection: "primary"}}
		evidence.Turns = append(evidence.Turns, promptTurn{Label: string(k), Prompt: workerPrompt(req, ob)})
		s, err := proposalSchema(k)
		if err != nil {
			panic(fmt.Sprintf("product: the %s proposal schema: %v", k, err))
		}
		evidence.Schemas = append(evidence.Schemas, s)
	}
	return map[string]promptSet{
		promptsEvidence: evidence,
		promptsPatch: {Name: promptsPatch, Instructions: threadInstructions(patchInstructions, inv), Thread: thread,
			Turns:   []promptTurn{{"patch", patchPrompt(sample, refs, nil)}, {"repair", patchPrompt(sample, refs, repair)}},
			Schemas: []json.RawMessage{patchReportSchema()}},
		promptsReview: {Name: promptsReview, Instructions: threadInstructions(reviewInstructions, inv), Thread: thread,
			Turns:   []promptTurn{{"review", reviewPrompt(reviewRequest{Patch: files, Diff: "sample diff\n", Criteria: []string{"b3:sample"}})}},
			Schemas: []json.RawMessage{reviewSchema()}},
		promptsVerify: {Name: promptsVerify, Instructions: threadInstructions(verifyInstructions, inv), Thread: thread,
			Turns: []promptTurn{{"verify", verifyPrompt(sample, refs, []PatchOperation{files[0].PatchOperation})},
				{"lifecycle-verify", lifecycleVerifyPrompt(verifyRequest{Request: sample, Patch: files, Context: refs,
					Tests: []testLine{{Test: "TestSample", Command: "go test -run '^TestSample$' .", Outcome: lifecycle.TestPassed}}})}},
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
