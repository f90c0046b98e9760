package product

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/needle-dev/needle/product/internal/schema"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The prompts and answer schemas of the change workers. Everything a worker
// answers is untrusted: the patch is built from the checkout, the report is
// decoded strictly and bounded, and a verdict is checked for consistency.

const patchInstructions = "You are a Needle patch worker. The current directory is a disposable checkout of the repository; " +
	"you may write only inside it and only the paths the task declares. Make the change with the apply_patch tool or shell " +
	"commands, keep it minimal, write UTF-8 text only, never touch .git. Needle compares the checkout with its base to build " +
	"the patch and rejects the whole patch if any write falls outside the declared paths. Finish with exactly one JSON object " +
	"that matches the output schema: a summary, what you did for each acceptance criterion (numbered from 1) and residual risks."

const verifyInstructions = "You are a Needle verifier, independent of whoever wrote the change. The current directory is a " +
	"read-only checkout with the change applied. Judge each acceptance criterion (numbered from 1) from the code itself; " +
	"never modify anything. Answer with exactly one JSON object that matches the output schema: verified only if every " +
	"criterion is met; repairable if a small, specific fix would meet them (say which in repair_instructions); rejected if the " +
	"change is wrong in approach; inconclusive if you cannot tell."

// patchReportSchema is the outputSchema of a patch worker's final message.
// It is encoded on first use: package init runs in every needle process.
var patchReportSchema = sync.OnceValue(func() json.RawMessage {
	return json.RawMessage(mustJSON(schema.Strict(map[string]any{
		"summary": map[string]any{"type": "string"},
		"criteria": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1, "maximum": maxCriteria},
			"addressed": map[string]any{"type": "boolean"},
			"note":      map[string]any{"type": "string"},
		})},
		"risks": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	})))
})

// verdictSchema is the outputSchema of a verifier's final message.
// It is encoded on first use: package init runs in every needle process.
var verdictSchema = sync.OnceValue(func() json.RawMessage {
	return json.RawMessage(mustJSON(schema.Strict(map[string]any{
		"verdict": schema.Enum(lifecycle.Verdicts...),
		"criteria": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1, "maximum": maxCriteria},
			"status":    schema.Enum(lifecycle.CriterionStatuses...),
			"reason":    map[string]any{"type": "string"},
		})},
		"repair_instructions": map[string]any{"type": "string"},
	})))
})

// Bounds on what a worker's report may put in front of the caller.
const (
	maxReportNote  = 500
	maxReportRisks = 8
	maxReportRisk  = 256
)

// decodePatchReport decodes a report for n criteria strictly; nil when it
// is malformed, names a criterion twice or out of range.
func decodePatchReport(raw string, n int) *patchReport {
	var r patchReport
	if decodeStrict([]byte(raw), &r) != nil {
		return nil
	}
	seen := map[int]bool{}
	for i := range r.Criteria {
		c := &r.Criteria[i]
		if c.Criterion < 1 || c.Criterion > n || seen[c.Criterion] {
			return nil
		}
		seen[c.Criterion] = true
		c.Note = clip(c.Note, maxReportNote)
	}
	r.Summary = clip(r.Summary, 2000)
	r.Risks = r.Risks[:min(len(r.Risks), maxReportRisks)]
	for i := range r.Risks {
		r.Risks[i] = clip(oneLine(r.Risks[i]), maxReportRisk)
	}
	return &r
}

// verifierAnswer is a verifier's final message.
type verifierAnswer struct {
	Verdict  lifecycle.Verdict  `json:"verdict"`
	Criteria []criterionVerdict `json:"criteria"`
	Repair   string             `json:"repair_instructions"`
}

// judge decodes a verifier's answer for n criteria and checks it for
// consistency. What comes back is the verdict Needle stands by, the
// per-criterion judgements (one per criterion, "unknown" where the
// verifier said nothing) and the reasons a verdict was downgraded.
func judge(raw string, n int) (verdict lifecycle.Verdict, criteria []criterionVerdict, repair string, reasons []string) {
	criteria = make([]criterionVerdict, n)
	for i := range criteria {
		criteria[i] = criterionVerdict{Criterion: i + 1, Status: lifecycle.CriterionUnknown, Reason: ""}
	}
	var a verifierAnswer
	if decodeStrict([]byte(raw), &a) != nil || !slices.Contains(lifecycle.Verdicts, a.Verdict) {
		return lifecycle.VerdictInconclusive, criteria, "", []string{"the verifier's answer was malformed"}
	}
	seen := map[int]bool{}
	for _, c := range a.Criteria {
		if c.Criterion < 1 || c.Criterion > n || seen[c.Criterion] || !slices.Contains(lifecycle.CriterionStatuses, c.Status) {
			return lifecycle.VerdictInconclusive, criteria, "", []string{"the verifier's answer named criteria that do not exist"}
		}
		seen[c.Criterion] = true
		criteria[c.Criterion-1] = criterionVerdict{Criterion: c.Criterion, Status: c.Status, Reason: clip(c.Reason, maxReportNote)}
	}
	verdict, repair = a.Verdict, clip(strings.TrimSpace(a.Repair), 2000)
	switch {
	case verdict == lifecycle.VerdictVerified && slices.ContainsFunc(criteria, func(c criterionVerdict) bool { return c.Status != lifecycle.CriterionMet }):
		return lifecycle.VerdictInconclusive, criteria, "", []string{"the verifier said verified but did not find every criterion met"}
	case verdict == lifecycle.VerdictRepairable && repair == "":
		return lifecycle.VerdictInconclusive, criteria, "", []string{"the verifier said repairable without saying what to repair"}
	case verdict != lifecycle.VerdictRepairable:
		repair = ""
	}
	return verdict, criteria, repair, nil
}

// patchPrompt is the patch worker's turn prompt; a repair also gets the
// verifier's findings (never its transcript).
func patchPrompt(req changeRequest, refs []string, repair *verificationRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n", req.Task)
	writeCriteria(&b, req.Criteria)
	b.WriteString("You may write only these paths:\n")
	for _, s := range req.Scopes {
		if s.Kind == scopeSubtree {
			fmt.Fprintf(&b, "- every file under %s/\n", s.Path)
		} else {
			fmt.Fprintf(&b, "- %s\n", s.Path)
		}
	}
	fmt.Fprintf(&b, "At most %d files and %d bytes of new content.\n", req.Constraints.MaxFiles, req.Constraints.MaxBytes)
	for _, n := range req.Constraints.Notes {
		fmt.Fprintf(&b, "Constraint: %s\n", n)
	}
	writeRefs(&b, refs)
	if repair != nil {
		b.WriteString("The checkout already holds a first attempt. An independent verifier found it repairable:\n")
		for _, c := range repair.Criteria {
			if c.Status != lifecycle.CriterionMet {
				fmt.Fprintf(&b, "- criterion %d %s: %s\n", c.Criterion, c.Status, c.Reason)
			}
		}
		fmt.Fprintf(&b, "Repair: %s\n", repair.Repair)
	}
	return b.String()
}

// verifyPrompt is the verifier's turn prompt: the task, the criteria, the
// files the patch changed and the certified context — no patcher output.
func verifyPrompt(req changeRequest, refs []string, ops []PatchOperation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A change was made for this task: %s\n", req.Task)
	writeCriteria(&b, req.Criteria)
	b.WriteString("Files the change touched:\n")
	for _, op := range ops {
		fmt.Fprintf(&b, "- %s %s\n", op.Op, op.Path)
	}
	writeRefs(&b, refs)
	b.WriteString("Judge every criterion.\n")
	return b.String()
}

func writeCriteria(b *strings.Builder, criteria []string) {
	b.WriteString("Acceptance criteria:\n")
	for i, c := range criteria {
		fmt.Fprintf(b, "%d. %s\n", i+1, c)
	}
}

func writeRefs(b *strings.Builder, refs []string) {
	if len(refs) == 0 {
		return
	}
	b.WriteString("Certified context (proven fresh for this source):\n")
	for _, r := range refs {
		fmt.Fprintf(b, "%s\n", r)
	}
}
