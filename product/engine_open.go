package product

import (
	"context"
	"fmt"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Opening and closing an engine: the one place that wires the store, the
// App Server worker, the accountant, the refresher and the lifecycle's
// adapters together.

// Open opens the store in cfg.DataDir and the repository cfg.Repository.
// The engine owns that store: Close closes it.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	st, err := OpenStore(ctx, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	e, err := openEngine(ctx, cfg, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	e.ownStore = true
	return e, nil
}

// openEngine opens the repository cfg.Repository over an open store of
// cfg.DataDir: the resident runtime's engines share its one store.
func openEngine(ctx context.Context, cfg Config, st *store) (*Engine, error) {
	cfg, err := engineOpenDefaults(cfg)
	if err != nil {
		return nil, err
	}
	// Whether the root is a git work tree takes a git rev-parse, which
	// nothing before the first need waits for (initialize does not): the
	// repository decides it in the background, and its methods wait for
	// it and fail, as opening would have, when git refuses the repository.
	repo, err := snapshot.OpenAsync(ctx, cfg.Repository, nil)
	if err != nil {
		return nil, &Error{Op: "engine.open", Kind: kindIO, Err: err}
	}
	e := &Engine{cfg: cfg, store: st, root: repo.Root(), ledgers: map[string]*ledger{}, memo: map[string]*needMemo{}, needs: map[string]bool{}}
	e.stats = newStatCache(st, e.root)
	e.repo = repo.WithCache(e.stats)
	e.acct = newAccountant(st)
	fail := func(err error) (*Engine, error) { // the store is the caller's to close
		e.acct.close()
		e.repo.Close()
		return nil, err
	}
	e.val = newValidators(e.repo, cfg.DataDir, cfg.Tests)
	if cfg.Worker == nil && cfg.Codex != nil && !cfg.CacheOnly {
		if inside(e.root, cfg.DataDir) {
			return fail(invalidf("engine.open", "data-dir", "the data directory %s is inside the repository %s: workers' checkouts must live outside it", cfg.DataDir, e.root))
		}
		w, err := newCodexWorker(ctx, *cfg.Codex, cfg.DataDir)
		if err != nil {
			return fail(err)
		}
		e.cfg.Worker = w
		e.codex = w
	}
	if err := st.putDefinitionOnce(ctx); err != nil {
		return fail(err)
	}
	if cfg.RoleProfile != "" {
		if e.profile, err = e.Profile(ctx, cfg.RoleProfile); err != nil {
			return fail(err)
		}
		e.cfg.Limits = Limits{Needs: e.profile.Profile.Limits.Needs, Workers: e.profile.Profile.Limits.Workers}.clamp()
	}
	e.tests = &testAdapter{e: e, cfg: cfg.Tests}
	e.adapters = codexAdapters{e}.adapters(e.tests)
	if cfg.Lifecycle != nil {
		e.adapters, e.tests = *cfg.Lifecycle, nil
	}
	if err := e.recoverAtOpen(ctx); err != nil {
		return fail(err)
	}
	return e, nil
}

// engineOpenDefaults makes cfg's data directory absolute and fills in
// what cfg leaves unset.
func engineOpenDefaults(cfg Config) (Config, error) {
	dataDir, err := absDataDir(cfg.DataDir)
	if err != nil {
		return cfg, &Error{Op: "engine.open", Kind: kindIO, Err: err}
	}
	cfg.DataDir = dataDir
	cfg.Tests = cfg.Tests.resolve(dataDir)
	if cfg.Routes == nil {
		cfg.Routes = AllRoutes()
	}
	if cfg.Transport == "" {
		cfg.Transport = "api"
	}
	if cfg.FrontierBudget <= 0 {
		cfg.FrontierBudget = defaultFrontierBudget
	}
	if cfg.Prices == nil {
		cfg.Prices = &defaultPrices
	}
	cfg.Limits = cfg.Limits.clamp()
	return cfg, nil
}

// Close writes the accounting still queued (doc.go, "Durability"), closes
// the kept evidence worker, if any (worker_continue.go), removes the test
// checkouts kept between proposals (runner.go, takeCheckout), and closes
// the store if the engine owns it (Open); an engine of the resident
// runtime leaves the shared store open.
func (e *Engine) Close() error {
	e.flushStats()
	aerr := e.acct.close()
	var werr error
	if e.codex != nil {
		werr = e.codex.Close() // the kept worker of a session ends with its engine
	}
	cerr := e.val.close(context.Background()) // so do the test checkouts kept between proposals
	e.repo.Close()                            // stops its long-lived git processes
	if e.ownStore {
		if err := e.store.Close(); err != nil {
			return err
		}
	}
	if aerr != nil {
		return &Error{Op: "engine.close", Kind: kindStore, Err: fmt.Errorf("accounting: %w", aerr)}
	}
	if werr != nil {
		return &Error{Op: "engine.close", Kind: kindIO, Err: fmt.Errorf("kept worker: %w", werr)}
	}
	if cerr != nil {
		return &Error{Op: "engine.close", Kind: kindIO, Err: cerr}
	}
	return nil
}
