package product

import (
	"context"
)

// The data directory's door. The commands that name a --data-dir but no
// repository (config, profile, db check, hook install) reach its store
// only through dataHome, as the others reach a repository's through its
// Engine: the main_*.go files never name the store.

// openStore opens the store in dataDir, or inside the resident runtime
// lends the runtime's store. The caller calls release when done.
func (c *cli) openStore(dataDir string) (st *store, release func(), err error) {
	if c.rt != nil {
		if err := c.rt.serves(c.absPath(dataDir)); err != nil {
			return nil, nil, err
		}
		return c.rt.store, func() {}, nil
	}
	if st, err = OpenStore(c.ctx, c.absPath(dataDir)); err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// dataHome is an open data directory.
type dataHome struct{ st *store }

// openDataHome opens the data directory dataDir (inside the resident
// runtime, the runtime's); release closes what was opened.
func (c *cli) openDataHome(dataDir string) (dataHome, func(), error) {
	st, release, err := c.openStore(dataDir)
	return dataHome{st}, release, err
}

// Settings are the profile settings (needle config).
func (h dataHome) Settings(ctx context.Context) (map[string]string, error) { return h.st.Settings(ctx) }

// SetSetting sets one profile setting.
func (h dataHome) SetSetting(ctx context.Context, key, value string) error {
	return h.st.SetSetting(ctx, key, value)
}

// Profiles lists the role profiles, the built-in one first stored.
func (h dataHome) Profiles(ctx context.Context) ([]ProfileRevision, error) {
	if err := h.st.ensureDefaultProfile(ctx); err != nil {
		return nil, err
	}
	return h.st.profiles(ctx)
}

// Profile is a role profile's newest revision.
func (h dataHome) Profile(ctx context.Context, id string) (ProfileRevision, error) {
	if err := h.st.ensureDefaultProfile(ctx); err != nil {
		return ProfileRevision{}, err
	}
	return h.st.profile(ctx, id)
}

// CreateProfile stores a new revision of the role profile id.
func (h dataHome) CreateProfile(ctx context.Context, id string, body profile) (ProfileRevision, error) {
	if err := h.st.ensureDefaultProfile(ctx); err != nil {
		return ProfileRevision{}, err
	}
	return h.st.putProfileRevision(ctx, id, body, false)
}

// Check verifies the store (needle db check).
func (h dataHome) Check(ctx context.Context) (storeReport, error) { return h.st.Check(ctx) }
