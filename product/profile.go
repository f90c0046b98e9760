package product

import (
	"context"
	"database/sql"
	"fmt"
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

// ensureDefaultProfile creates the built-in profile's first revision once.
func (s *Store) ensureDefaultProfile(ctx context.Context) error {
	_, err := s.putProfileRevision(ctx, DefaultProfileID, defaultProfile, true)
	return err
}

// putProfileRevision appends a revision to a profile; with onlyFirst it
// does nothing when the profile exists.
func (s *Store) putProfileRevision(ctx context.Context, id string, p Profile, onlyFirst bool) (ProfileRevision, error) {
	if !profileIDPattern.MatchString(id) {
		return ProfileRevision{}, invalidf("profile", "id", "profile id %q must match %s", id, profileIDPattern)
	}
	if err := checkProfile(p); err != nil {
		return ProfileRevision{}, err
	}
	rev := ProfileRevision{ID: id, Profile: p, Digest: mustID(tagProfile, p)}
	err := s.inTx(ctx, "store.profile", func(tx *sql.Tx, now string) error {
		var last int
		if err := tx.QueryRow(`SELECT coalesce(max(revision), 0) FROM profile_revisions WHERE profile_id = ?`, id).Scan(&last); err != nil {
			return err
		}
		if onlyFirst && last > 0 {
			rev.Revision = last
			return nil
		}
		rev.Revision = last + 1
		_, err := tx.Exec(`INSERT INTO profile_revisions (profile_id, revision, body, digest, created_at) VALUES (?, ?, ?, ?, ?)`,
			id, rev.Revision, mustJSON(p), rev.Digest, now)
		return err
	})
	return rev, err
}

// profile returns the newest revision of a profile.
func (s *Store) profile(ctx context.Context, id string) (ProfileRevision, error) {
	rev := ProfileRevision{ID: id}
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT revision, body, digest FROM profile_revisions WHERE profile_id = ?
		ORDER BY revision DESC LIMIT 1`, id).Scan(&rev.Revision, &body, &rev.Digest)
	if errNoRows(err) {
		return rev, &Error{Op: "profile", Kind: KindNotFound, Err: fmt.Errorf("no role profile %q (needle profile list shows them)", id)}
	}
	if err != nil {
		return rev, storeError("store.profile", err)
	}
	return rev, decodeStored(body, &rev.Profile)
}

// profiles returns the newest revision of every profile.
func (s *Store) profiles(ctx context.Context) ([]ProfileRevision, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT profile_id FROM profile_revisions ORDER BY profile_id`)
	if err != nil {
		return nil, storeError("store.profiles", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, storeError("store.profiles", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	var out []ProfileRevision
	for _, id := range ids {
		rev, err := s.profile(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, rev)
	}
	return out, nil
}

// Profile returns the newest revision of a role profile; the built-in
// "default" profile is created on first use.
func (e *Engine) Profile(ctx context.Context, id string) (ProfileRevision, error) {
	if err := e.store.ensureDefaultProfile(ctx); err != nil {
		return ProfileRevision{}, err
	}
	return e.store.profile(ctx, id)
}
