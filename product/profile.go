package product

import (
	"cmp"
	"context"

	"github.com/needle-dev/needle/product/lifecycle"
)

// profile is a role profile: how workers run for a session. Profiles are
// versioned by immutable revisions; a session freezes the revision it
// started with.
type profile struct {
	WorkerModel string         `json:"worker_model"` // "" = the App Server's configured model
	Effort      string         `json:"effort"`       // "" | low | medium | high
	Limits      profileLimits  `json:"limits"`
	Sandbox     profileSandbox `json:"sandbox"`
	// Roles sets each lifecycle worker role apart (needle change). Absent,
	// the roles follow WorkerModel, Effort and Sandbox (effectiveRoles); a
	// profile written before roles existed keeps its digest.
	Roles *profileRoles `json:"roles,omitempty"`
}

// profileRoles are the settings of the lifecycle's worker roles, each with
// its own sandbox, model and effort.
type profileRoles struct {
	Explorer    roleSettings `json:"explorer"`
	Implementer roleSettings `json:"implementer"`
	TestRunner  roleSettings `json:"test_runner"`
	Reviewer    roleSettings `json:"reviewer"`
	Verifier    roleSettings `json:"verifier"`
}

// roleSettings say how one role's worker runs.
type roleSettings struct {
	Sandbox string `json:"sandbox"` // the role's one sandbox (lifecycle.RoleSandbox)
	Model   string `json:"model"`   // "" = the App Server's configured model
	Effort  string `json:"effort"`  // "" | low | medium | high
	// Prompts names the prompt set of the prompt profile the role's worker
	// is briefed with (prompt_profile.go); "" = the role's own
	// (defaultRolePrompts). Absent, a profile keeps its digest.
	Prompts string `json:"prompts,omitempty"`
}

// roleWorker is the content id of what a role's worker is, whatever the
// role is called: its sandbox, model, effort and prompt set with that
// set's digest. Two roles with one roleWorker are the same worker.
func roleWorker(role lifecycle.Role, r roleSettings) string {
	prompts := r.Prompts
	if prompts == "" {
		prompts = defaultRolePrompts[role]
	}
	return mustID(tagRoleWorker, struct {
		Sandbox       string `json:"sandbox"`
		Model         string `json:"model"`
		Effort        string `json:"effort"`
		Prompts       string `json:"prompts"`
		PromptsDigest string `json:"prompts_digest"`
	}{r.Sandbox, r.Model, r.Effort, prompts, currentPromptProfile().Sets[prompts]})
}

// checkDistinctVerifier refuses a profile whose verifier is the same
// worker as its reviewer or its implementer: the same sandbox, model,
// effort and prompts. The role names do not count: a verification is
// independent only when another worker makes it.
func checkDistinctVerifier(op string, p profile) error {
	roles := p.effectiveRoles()
	v := roleWorker(lifecycle.RoleVerifier, roles.Verifier)
	for _, other := range []lifecycle.Role{lifecycle.RoleReviewer, lifecycle.RoleImplementer} {
		if roleWorker(other, roles.role(other)) == v {
			r := roles.Verifier
			return invalidf(op, "roles.verifier", "the verifier must be a distinct profile, but its settings are the %s's "+
				"(sandbox %s, model %q, effort %q, prompts %s): give it another model, effort or prompt set", other, r.Sandbox, r.Model, r.Effort,
				cmp.Or(r.Prompts, defaultRolePrompts[lifecycle.RoleVerifier]))
		}
	}
	return nil
}

// effectiveRoles are the profile's role settings: its roles when it sets
// them, otherwise derived from the single-worker fields.
func (p profile) effectiveRoles() profileRoles {
	if p.Roles != nil {
		return *p.Roles
	}
	base := roleSettings{Model: p.WorkerModel, Effort: p.Effort}
	with := func(sandbox string) roleSettings { r := base; r.Sandbox = sandbox; return r }
	return profileRoles{
		Explorer:    with(p.Sandbox.Evidence),
		Implementer: with(p.Sandbox.Patch),
		TestRunner:  with(lifecycle.RoleSandbox[lifecycle.RoleTestRunner]),
		Reviewer:    with(p.Sandbox.Verifier),
		Verifier:    with(p.Sandbox.Verifier),
	}
}

// role returns the settings of one lifecycle role.
func (r profileRoles) role(role lifecycle.Role) roleSettings {
	switch role {
	case lifecycle.RoleExplorer:
		return r.Explorer
	case lifecycle.RoleImplementer:
		return r.Implementer
	case lifecycle.RoleTestRunner:
		return r.TestRunner
	case lifecycle.RoleReviewer:
		return r.Reviewer
	}
	return r.Verifier
}

// profileLimits are the session limits of a profile.
type profileLimits struct {
	Needs   int `json:"needs"`
	Workers int `json:"workers"`
}

// profileSandbox is the sandbox of each worker role. Evidence workers and
// verifiers are read-only; only the patch worker may write, and only inside
// its disposable checkout.
type profileSandbox struct {
	Evidence string `json:"evidence"`
	Patch    string `json:"patch"`
	Verifier string `json:"verifier"`
}

// ProfileRevision is one immutable revision of a named profile.
type ProfileRevision struct {
	ID       string  `json:"profile_id"`
	Revision int     `json:"revision"`
	Digest   string  `json:"digest"`
	Profile  profile `json:"profile"`
}

// DefaultProfileID names the built-in profile every data directory has from
// its first start, so a new user can connect at once.
const DefaultProfileID = "default"

// defaultProfile is the built-in profile's first revision.
var defaultProfile = profile{
	Limits:  profileLimits{Needs: defaultNeedLimit, Workers: defaultWorkerLimit},
	Sandbox: profileSandbox{Evidence: "read-only", Patch: "workspace-write", Verifier: "read-only"},
}

var profileIDPattern = lifecycle.ProfileIDPattern

// checkProfile validates a profile body.
func checkProfile(p profile) error {
	const op = "profile"
	switch {
	case p.Effort != "" && p.Effort != "low" && p.Effort != "medium" && p.Effort != "high":
		return invalidf(op, "effort", "unknown effort %q; want low, medium or high", p.Effort)
	case p.Limits.Needs < 1 || p.Limits.Needs > HardSessionLimit:
		return invalidf(op, "limits.needs", "must be 1 to %d", HardSessionLimit)
	case p.Limits.Workers < 0 || p.Limits.Workers > HardSessionLimit:
		return invalidf(op, "limits.workers", "must be 0 to %d", HardSessionLimit)
	case p.Sandbox.Evidence != "read-only" || p.Sandbox.Verifier != "read-only":
		return invalidf(op, "sandbox", "evidence workers and verifiers are always read-only")
	case p.Sandbox.Patch != "workspace-write" && p.Sandbox.Patch != "read-only":
		return invalidf(op, "sandbox.patch", "want workspace-write or read-only")
	case len(p.WorkerModel) > 128:
		return invalidf(op, "worker_model", "longer than 128 bytes")
	}
	if err := checkDistinctVerifier(op, p); err != nil {
		return err
	}
	if p.Roles == nil {
		return nil
	}
	for _, role := range lifecycle.Roles {
		r, path := p.Roles.role(role), "roles."+string(role)
		switch {
		case r.Prompts != "" && checkPromptSet(op, path+".prompts", r.Prompts) != nil:
			return checkPromptSet(op, path+".prompts", r.Prompts)
		case r.Prompts != "" && defaultRolePrompts[role] == "":
			return invalidf(op, path+".prompts", "the %s is Needle's own test run: it is briefed with no prompts", role)
		case r.Prompts != "" && r.Prompts != defaultRolePrompts[role]:
			return invalidf(op, path+".prompts", "the %s answers as the %s prompt set asks, not %s", role, defaultRolePrompts[role], r.Prompts)
		case role == lifecycle.RoleImplementer && r.Sandbox != "workspace-write" && r.Sandbox != "read-only":
			return invalidf(op, path+".sandbox", "want workspace-write or read-only (which prepares no change)")
		case role != lifecycle.RoleImplementer && r.Sandbox != lifecycle.RoleSandbox[role]:
			return invalidf(op, path+".sandbox", "the %s always runs %s", role, lifecycle.RoleSandbox[role])
		case r.Effort != "" && r.Effort != "low" && r.Effort != "medium" && r.Effort != "high":
			return invalidf(op, path+".effort", "unknown effort %q; want low, medium or high", r.Effort)
		case len(r.Model) > 128:
			return invalidf(op, path+".model", "longer than 128 bytes")
		}
	}
	return nil
}

// Profile returns the newest revision of a role profile; the built-in
// "default" profile is created on first use.
func (e *Engine) Profile(ctx context.Context, id string) (ProfileRevision, error) {
	if err := e.store.ensureDefaultProfile(ctx); err != nil {
		return ProfileRevision{}, err
	}
	return e.store.profile(ctx, id)
}
