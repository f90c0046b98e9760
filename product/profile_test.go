package product

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// sameJudges is a profile whose verifier is its reviewer again: the same
// sandbox, model, effort and prompts, under another role's name.
var sameJudges = profile{Limits: defaultProfile.Limits, Sandbox: defaultProfile.Sandbox, Roles: &profileRoles{
	Explorer:    roleSettings{Sandbox: "read-only"},
	Implementer: roleSettings{Sandbox: "workspace-write"},
	TestRunner:  roleSettings{Sandbox: "workspace-write"},
	Reviewer:    roleSettings{Sandbox: "read-only", Model: "judge", Effort: "high"},
	Verifier:    roleSettings{Sandbox: "read-only", Model: "judge", Effort: "high", Prompts: promptsReview},
}}

// TestProfile_DistinctVerifier: the verifier is compared with the reviewer
// and the implementer by what their workers are — sandbox, model, effort
// and prompts — never by the roles' names. The built-in profile's
// verifier differs in its prompts; a profile whose verifier is its
// reviewer again is invalid input.
func TestProfile_DistinctVerifier(t *testing.T) {
	if err := checkProfile(defaultProfile); err != nil {
		t.Fatalf("the built-in profile: %v", err)
	}
	roles := defaultProfile.effectiveRoles()
	if roles.Reviewer != roles.Verifier {
		t.Fatalf("the built-in roles differ in their settings already: %+v %+v", roles.Reviewer, roles.Verifier)
	}
	if roleWorker(lifecycle.RoleReviewer, roles.Reviewer) == roleWorker(lifecycle.RoleVerifier, roles.Verifier) {
		t.Error("the built-in verifier is the reviewer's worker")
	}
	// The names alone tell any two roles apart: that is no distinction.
	rev := ProfileRevision{ID: "same", Revision: 1, Profile: sameJudges}
	if roleRef(rev, lifecycle.RoleReviewer).Digest == roleRef(rev, lifecycle.RoleVerifier).Digest {
		t.Fatal("the role digests no longer name the role: this test's premise is gone")
	}
	err := checkProfile(sameJudges)
	var e *Error
	if KindOf(err) != KindInvalidInput || !errors.As(err, &e) || e.Path != "roles.verifier" ||
		!strings.Contains(err.Error(), "the verifier must be a distinct profile, but its settings are the reviewer's") {
		t.Errorf("a verifier that is the reviewer again: %v", err)
	}
	// Any one setting apart makes another worker.
	for name, edit := range map[string]func(*roleSettings){
		"Model":   func(r *roleSettings) { r.Model = "second-judge" },
		"Effort":  func(r *roleSettings) { r.Effort = "medium" },
		"Prompts": func(r *roleSettings) { r.Prompts = "" },
	} {
		p := sameJudges
		roles := *p.Roles
		p.Roles = &roles
		edit(&roles.Verifier)
		if err := checkDistinctVerifier("profile", p); err != nil {
			t.Errorf("%s apart: %v", name, err)
		}
	}
	// The implementer counts too: a read-only implementer briefed with the
	// verifier's prompts would be the verifier.
	p := sameJudges
	same := *p.Roles
	same.Verifier = roleSettings{Sandbox: "read-only"}
	same.Implementer = roleSettings{Sandbox: "read-only", Prompts: promptsVerify}
	p.Roles = &same
	if err := checkDistinctVerifier("profile", p); err == nil || !strings.Contains(err.Error(), "the implementer's") {
		t.Errorf("a verifier that is the implementer: %v", err)
	}
}

// TestLifecycle_RefusesSameJudges: a profile whose verifier is its
// reviewer again, stored by another writer (an older needle, or by hand),
// is refused when a lifecycle would start under it, as invalid input that
// names the profile, and no lifecycle is made.
func TestLifecycle_RefusesSameJudges(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	if _, err := f.te.store.db.Exec(`INSERT INTO profile_revisions (profile_id, revision, body, digest, created_at)
		VALUES ('same', 1, ?, ?, '2025-01-01T00:00:00Z')`, mustJSON(sameJudges), mustID(tagProfile, sameJudges)); err != nil {
		t.Fatal(err)
	}
	_, err := f.te.StartLifecycle(context.Background(), LifecycleStart{Request: f.request(), TestPlans: []string{f.plan}, Profile: "same"})
	if KindOf(err) != KindInvalidInput || !strings.Contains(err.Error(), "role profile same revision 1: roles.verifier: the verifier must be a distinct profile") {
		t.Fatalf("StartLifecycle under a profile whose verifier is its reviewer: %v", err)
	}
	if all, err := f.te.Lifecycles(context.Background()); err != nil || len(all) != 0 {
		t.Errorf("lifecycles after the refusal: %v, %v", all, err)
	}
	// The default profile starts one.
	if d := f.start(); d.Status != lifecycle.StatusRunning {
		t.Errorf("under the default profile: %s/%s", d.Phase, d.Status)
	}
}
