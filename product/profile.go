package product

import (
	"context"
	"regexp"
)

// Profile is a role profile: how workers run for a session. Profiles are
// versioned by immutable revisions; a session freezes the revision it
// started with.
type Profile struct {
	WorkerModel string         `json:"worker_model"` // "" = the App Server's configured model
	Effort      string         `json:"effort"`       // "" | low | medium | high
	Limits      ProfileLimits  `json:"limits"`
	Sandbox     ProfileSandbox `json:"sandbox"`
}

// ProfileLimits are the session limits of a profile.
type ProfileLimits struct {
	Needs   int `json:"needs"`
	Workers int `json:"workers"`
}

// ProfileSandbox is the sandbox of each worker role. Evidence workers and
// verifiers are read-only; only the patch worker may write, and only inside
// its disposable checkout.
type ProfileSandbox struct {
	Evidence string `json:"evidence"`
	Patch    string `json:"patch"`
	Verifier string `json:"verifier"`
}

// ProfileRevision is one immutable revision of a named profile.
type ProfileRevision struct {
	ID       string  `json:"profile_id"`
	Revision int     `json:"revision"`
	Digest   string  `json:"digest"`
	Profile  Profile `json:"profile"`
}

// DefaultProfileID names the built-in profile every data directory has from
// its first start, so a new user can connect at once.
const DefaultProfileID = "default"

// defaultProfile is the built-in profile's first revision.
var defaultProfile = Profile{
	Limits:  ProfileLimits{Needs: DefaultNeedLimit, Workers: DefaultWorkerLimit},
	Sandbox: ProfileSandbox{Evidence: "read-only", Patch: "workspace-write", Verifier: "read-only"},
}

var profileIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// checkProfile validates a profile body.
func checkProfile(p Profile) error {
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
