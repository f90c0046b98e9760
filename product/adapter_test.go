package product

import (
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

func TestDecodeReview(t *testing.T) {
	for _, tt := range []struct {
		name, raw, err string
		n              int
	}{
		{"OK", `{"findings":[{"severity":"major","criterion":2,"summary":"x"}]}`, "", 1},
		{"Empty", `{"findings":[]}`, "", 0},
		{"ErrUnknownField", `{"findings":[],"verdict":"verified"}`, "malformed", 0},
		{"ErrSeverity", `{"findings":[{"severity":"fatal","criterion":0,"summary":"x"}]}`, "unknown severity", 0},
		{"ErrCriterion", `{"findings":[{"severity":"info","criterion":3,"summary":"x"}]}`, "criterion", 0},
		{"ErrNoSummary", `{"findings":[{"severity":"info","criterion":0,"summary":"  "}]}`, "no summary", 0},
		{"ErrTrailing", `{"findings":[]} {}`, "malformed", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeReview(tt.raw, 2)
			if tt.err == "" && (err != nil || len(got) != tt.n) {
				t.Fatalf("decodeReview = %v, %v", got, err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("decodeReview = %v, want an error with %q", err, tt.err)
			}
		})
	}
}

// FuzzDecodeReview: whatever a reviewer answers, decodeReview either
// refuses it or returns findings the machine accepts in a review.
func FuzzDecodeReview(f *testing.F) {
	f.Add(`{"findings":[{"severity":"minor","criterion":1,"summary":"x\u0000y"}]}`)
	f.Add(`{"findings":[{"severity":"info","criterion":0,"summary":"` + strings.Repeat("é", 400) + `"}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		findings, err := decodeReview(raw, 3)
		if err != nil {
			return
		}
		r := lifecycle.ReviewArtifact{Patch: lifecycle.SampleID("p"), Reviewer: lifecycle.SampleFreeze(1, 3).Profile(lifecycle.RoleReviewer),
			Criteria: lifecycle.SampleFreeze(1, 3).Criteria, Findings: findings}
		if err := r.Validate(); err != nil {
			t.Fatalf("decodeReview(%q) accepted findings the machine refuses: %v", raw, err)
		}
	})
}

// checkPatchFiles refuses what the real patch builder would: a path out of
// scope, git metadata, a digest that does not match the content.
func TestCheckPatchFiles(t *testing.T) {
	req := changeRequest{Scopes: []pathScope{{Path: "a.go", Kind: scopeExact}}, Constraints: changeConstraints{MaxFiles: 2, MaxBytes: 100}}
	ok := patchFile{PatchOperation: PatchOperation{Op: patchAdd, Path: "a.go", After: digestOf("x"), Bytes: 1}, Content: "x"}
	if r := checkPatchFiles(req, []patchFile{ok}); len(r) != 0 {
		t.Fatalf("a good patch: %v", r)
	}
	for name, f := range map[string]patchFile{
		"out of scope": {PatchOperation: PatchOperation{Op: patchAdd, Path: "b.go", After: digestOf("x"), Bytes: 1}, Content: "x"},
		"git":          {PatchOperation: PatchOperation{Op: patchAdd, Path: ".git/config", After: digestOf("x"), Bytes: 1}, Content: "x"},
		"digest":       {PatchOperation: PatchOperation{Op: patchAdd, Path: "a.go", After: digestOf("y"), Bytes: 1}, Content: "x"},
		"op":           {PatchOperation: PatchOperation{Op: patchModify, Path: "a.go", After: digestOf("x"), Bytes: 1}, Content: "x"},
		"delete body":  {PatchOperation: PatchOperation{Op: patchDelete, Path: "a.go", Before: digestOf("x")}, Content: "x"},
	} {
		if r := checkPatchFiles(req, []patchFile{f}); len(r) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	if r := checkPatchFiles(req, nil); len(r) == 0 {
		t.Error("an empty patch: accepted")
	}
}
