package product

import (
	"context"
	"database/sql"
	"fmt"
)

// ensureDefaultProfile creates the built-in profile's first revision once.
func (s *store) ensureDefaultProfile(ctx context.Context) error {
	// A read first: once the profile exists (every open after the first)
	// this takes no write lock.
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM profile_revisions WHERE profile_id = ? LIMIT 1`, DefaultProfileID).Scan(&one)
	if err == nil {
		return nil
	}
	if !errNoRows(err) {
		return storeError("store.profile", err)
	}
	_, err = s.putProfileRevision(ctx, DefaultProfileID, defaultProfile, true)
	return err
}

// putProfileRevision appends a revision to a profile; with onlyFirst it
// does nothing when the profile exists.
func (s *store) putProfileRevision(ctx context.Context, id string, p profile, onlyFirst bool) (ProfileRevision, error) {
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
func (s *store) profile(ctx context.Context, id string) (ProfileRevision, error) {
	rev := ProfileRevision{ID: id}
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT revision, body, digest FROM profile_revisions WHERE profile_id = ?
		ORDER BY revision DESC LIMIT 1`, id).Scan(&rev.Revision, &body, &rev.Digest)
	if errNoRows(err) {
		return rev, &Error{Op: "profile", Kind: kindNotFound, Err: fmt.Errorf("no role profile %q (needle profile list shows them)", id)}
	}
	if err != nil {
		return rev, storeError("store.profile", err)
	}
	return rev, decodeStored(body, &rev.Profile)
}

// profiles returns the newest revision of every profile.
func (s *store) profiles(ctx context.Context) ([]ProfileRevision, error) {
	ids, err := queryAll(ctx, s.db, "store.profiles", `SELECT DISTINCT profile_id FROM profile_revisions ORDER BY profile_id`, nil,
		func(rows rowScanner, id *string) error { return rows.Scan(id) })
	if err != nil {
		return nil, err
	}
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

// SetSetting stores a profile setting.
func (s *store) SetSetting(ctx context.Context, key, value string) error {
	return s.inTx(ctx, "store.setting", func(tx *sql.Tx, now string) error {
		_, err := tx.Exec(`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, now)
		return err
	})
}

// Settings returns every profile setting.
func (s *store) Settings(ctx context.Context) (map[string]string, error) {
	type setting struct{ key, value string }
	all, err := queryAll(ctx, s.db, "store.settings", `SELECT key, value FROM settings ORDER BY key`, nil,
		func(rows rowScanner, kv *setting) error { return rows.Scan(&kv.key, &kv.value) })
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, kv := range all {
		out[kv.key] = kv.value
	}
	return out, nil
}

// profileRevision reads one revision of a role profile.
func (s *store) profileRevision(ctx context.Context, id string, revision int) (ProfileRevision, error) {
	rev := ProfileRevision{ID: id, Revision: revision}
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body, digest FROM profile_revisions WHERE profile_id = ? AND revision = ?`,
		id, revision).Scan(&body, &rev.Digest)
	if errNoRows(err) {
		return rev, &Error{Op: "profile", Kind: kindNotFound, Err: fmt.Errorf("no revision %d of role profile %q", revision, id)}
	}
	if err != nil {
		return rev, storeError("store.profile", err)
	}
	return rev, decodeStored(body, &rev.Profile)
}
