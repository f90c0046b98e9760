package product

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Config configures an Engine.
type Config struct {
	DataDir    string   // the profile's data directory (holds needle.db)
	Repository string   // the repository root needs are resolved against
	Routes     routeSet // enabled routes; nil means all
	Worker     workerPort
	// Codex, when set and Worker is nil, makes the Codex App Server
	// evidence worker the workerPort.
	Codex     *CodexConfig
	CacheOnly bool   // never spawn a worker, even with a port
	Transport string // recorded with sessions: cli, mcp, hook, api (default)
	MainModel string
	Limits    Limits
	// RoleProfile, when set, names the role profile whose newest revision
	// the engine runs under: its limits replace Limits.
	RoleProfile string
	// FrontierBudget bounds the context text in bytes (default 6 KiB).
	FrontierBudget int
	// Prices weigh operator costs in economic selection (default: defaultPrices).
	Prices *prices
	// Lifecycle, when set, replaces the change lifecycle's adapters (the
	// defaults: Codex App Server workers and Needle's test runner).
	Lifecycle *lifecycleAdapters
	// Tests says how Needle runs tests: the focused_tests it certifies and
	// the change lifecycle's test plans, in a sandbox (see TestsConfig).
	Tests TestsConfig
}

// Engine resolves needs for one repository against one store. It is safe
// for concurrent use; resolutions run one at a time, first come first
// served.
type Engine struct {
	cfg   Config
	store *store
	repo  *snapshot.Repo
	root  string
	turn  fifo
	// ownStore: Close closes the store (Open); false for an engine over the
	// resident runtime's shared store.
	ownStore bool
	codex    *codexWorker // runs change workers; nil without an App Server
	val      *validators
	// profile is the revision of Config.RoleProfile; zero without one.
	profile ProfileRevision

	stats *statCache  // the repository's stat cache (e.repo reads through it)
	acct  *accountant // writes answers' accounting off the request path

	mu      sync.Mutex
	ledgers map[string]*ledger

	// adapters run the change lifecycle's phases.
	adapters lifecycleAdapters
	// tests is the test phase's own adapter when adapters.Test is it
	// (nil when Config.Lifecycle replaces the adapters): what a run's
	// preflight asks whether the test phase can run at all.
	tests *testAdapter

	// Guarded by turn: one resolution at a time reads and writes them.
	costs costBook             // the cost aggregates; nil until first needed
	memo  map[string]*needMemo // per need_id, the candidates of its last resolution
	needs map[string]bool      // need ids this engine has stored
	// retried are the undecided proposals this engine tried again.
	retried map[int64]bool
	// gen is the evidence generation the current resolution started from
	// (candidates); perObligation the remembered worker-tokens estimate
	// (finish).
	gen           int64
	perObligation tokenEstimate
}

// Root returns the repository root the engine resolves against.
func (e *Engine) Root() string { return e.root }

// RoleProfile returns the revision of Config.RoleProfile the engine runs
// under; the zero revision without one.
func (e *Engine) RoleProfile() ProfileRevision { return e.profile }

// Routes returns the routes enabled for the engine's needs.
func (e *Engine) Routes() routeSet { return e.cfg.Routes }

// ProposeResult is the outcome of an operator's proposal.
type ProposeResult struct {
	Status        string   `json:"status"` // certified | rejected | undecided
	ArtifactID    string   `json:"artifact_id"`
	CertificateID string   `json:"certificate_id"`
	Reasons       []string `json:"reasons"`
	// Undecided names what the proof needs and this machine lacks.
	Undecided []string `json:"undecided"`
	// Level and Reach say how a certified proposal was proven: level ast
	// or lexical; reach executed (a run showed it), static (a flow by
	// go/types alone, nothing run) or lexical; "" for locations.
	Level string `json:"level,omitempty"`
	Reach string `json:"reach,omitempty"`
}

// Propose validates an operator's proposal against the current source and
// stores the attempt; certified evidence becomes reusable. Invalid JSON is a
// KindInvalidInput error and stores nothing.
func (e *Engine) Propose(ctx context.Context, raw []byte) (ProposeResult, error) {
	p, err := decodeProposal(raw)
	if err != nil {
		return ProposeResult{}, err
	}
	if err := e.turn.lock(ctx); err != nil {
		return ProposeResult{}, err
	}
	defer e.turn.unlock()
	defer e.flushStats()
	defer e.repo.Release()
	v, err := e.val.validate(ctx, p)
	if err != nil {
		return ProposeResult{}, &Error{Op: "evidence.propose", Kind: kindIO, Err: err}
	}
	rec, err := e.store.recordAttempt(ctx, e.root, "", "operator", raw, v, "")
	if err != nil {
		return ProposeResult{}, err
	}
	res := ProposeResult{Status: rec.Outcome(), Reasons: nonNil(rec.Reasons), Undecided: nonNil(rec.Undecided)}
	if rec.Certified {
		res.ArtifactID, res.CertificateID = rec.ArtifactID, rec.CertificateID
		res.Level, res.Reach = v.Level, v.Reach
	}
	return res, nil
}

// ledger returns the session's ledger: the one this engine keeps, or the
// one its stored steps rebuild (a session an earlier process started), or
// a new one, creating the session.
func (e *Engine) ledger(ctx context.Context, session string) (*ledger, error) {
	l, _, err := e.session(ctx, session, nil, false)
	return l, err
}

// storedLedger is ledger once the session's row is stored.
func (e *Engine) storedLedger(ctx context.Context, session string) (*ledger, error) {
	l, err := e.ledger(ctx, session)
	if err != nil {
		return nil, err
	}
	return l, e.storedSession(ctx, l)
}

// FreezeSession starts a session and records what it froze (f) with the
// repository and the session limits in force. A new session's row and its
// freeze are written once, in one transaction, by the accountant (doc.go,
// "Durability"): an MCP initialize answer waits for no write. Whatever
// must find the row stored first waits for it (storedSession).
func (e *Engine) FreezeSession(ctx context.Context, session string, f sessionFreeze) error {
	_, _, err := e.session(ctx, session, &f, true)
	return err
}

// ResumeSession continues a session an earlier process started — its
// ledger is rebuilt from the store, so its limits hold across processes —
// or starts and freezes it (FreezeSession) when there is none. A session
// frozen for another repository is refused. A session that froze another
// semantic definition, route set, main model, transport contract, marker
// grammar or prompt profile than this process runs under is resumed, and
// says so: SessionChanges names each, and every reply of the session
// begins by saying it.
func (e *Engine) ResumeSession(ctx context.Context, session string, f sessionFreeze) error {
	l, existed, err := e.session(ctx, session, &f, false)
	if err != nil || !existed {
		return err
	}
	repo, ok, err := e.store.sessionRepository(ctx, session)
	switch {
	case err != nil:
		return err
	case ok && repo != e.root:
		return &Error{Op: "session.resume", Kind: kindConflict, Err: fmt.Errorf("session %s belongs to the repository %s, not %s", session, repo, e.root)}
	}
	frozen, ok, err := e.store.frozenSession(ctx, session)
	if err != nil || !ok {
		return err
	}
	changes := e.sessionChanges(frozen, f.Protocol)
	e.mu.Lock()
	l.changes = changes
	e.mu.Unlock()
	return nil
}

// SessionChanges names what a session resumed by ResumeSession froze that
// this process does not run under; none for a session started here.
func (e *Engine) SessionChanges(session string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := e.ledgers[session]; l != nil {
		return slices.Clone(l.changes)
	}
	return nil
}

// sessionChanges compares what a session froze with what this process
// runs under, speaking protocol. A digest a session started before they
// were recorded does not have is not known, and not a change.
func (e *Engine) sessionChanges(f frozenSession, protocol string) []string {
	now := currentSessionDigests(e.cfg.Transport, protocol, e.cfg.Routes)
	then := f.Digests
	var out []string
	changed := func(what, before, after string) {
		out = append(out, fmt.Sprintf("%s (%s then, %s now)", what, before, after))
	}
	if f.DefinitionID != DefinitionID() {
		changed("the semantic definition", shortDigest(f.DefinitionID), shortDigest(DefinitionID()))
	}
	if routes := routeNames(e.cfg.Routes); !slices.Equal(f.Routes, routes) {
		changed("the routes", strings.Join(f.Routes, ","), strings.Join(routes, ","))
	}
	switch {
	case f.Transport != e.cfg.Transport:
		changed("the transport", f.Transport, e.cfg.Transport)
	case then.Transport != "" && then.Transport != now.Transport:
		changed("the "+f.Transport+" transport's contract", shortDigest(then.Transport), shortDigest(now.Transport))
	}
	if then.Grammar != "" && then.Grammar != now.Grammar {
		changed("the @@need marker grammar", shortDigest(then.Grammar), shortDigest(now.Grammar))
	}
	if then.PromptDigest != "" && (then.PromptRevision != now.PromptRevision || then.PromptDigest != now.PromptDigest) {
		changed("the worker prompt profile", fmt.Sprintf("revision %d %s", then.PromptRevision, shortDigest(then.PromptDigest)),
			fmt.Sprintf("revision %d %s", now.PromptRevision, shortDigest(now.PromptDigest)))
	}
	if f.MainModel != "" && e.cfg.MainModel != "" && f.MainModel != e.cfg.MainModel {
		changed("the main model", f.MainModel, e.cfg.MainModel)
	}
	return out
}

// shortDigest is a content id cut for a message: "b3:" and 12 hex digits.
func shortDigest(id string) string { return clip(id, 15) + "…" }

// session returns the session's ledger and whether the session existed:
// the ledger this engine keeps, or the one its stored steps rebuild, or a
// new one, creating the session with what it froze when f is not nil.
// With fresh (FreezeSession), an existing session records f, and a new
// one's row is queued to the accountant instead of written now.
func (e *Engine) session(ctx context.Context, session string, f *sessionFreeze, fresh bool) (*ledger, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var freeze *sessionFreezeRow
	if f != nil {
		freeze = &sessionFreezeRow{root: e.root, freeze: *f, limits: e.cfg.Limits}
	}
	l, found := e.ledgers[session]
	if !found {
		var err error
		if l, found, err = e.store.sessionLedger(ctx, session); err != nil {
			return nil, false, err
		}
		if found {
			e.ledgers[session] = l
		}
	}
	if found {
		if freeze != nil && fresh {
			if err := e.storedSession(ctx, l); err != nil {
				return nil, false, err
			}
			return l, true, e.store.freezeSession(ctx, session, *freeze)
		}
		return l, true, nil
	}
	routes := make([]string, len(e.cfg.Routes))
	for i, r := range e.cfg.Routes {
		routes[i] = string(r)
	}
	protocol := ""
	if f != nil {
		protocol = f.Protocol
	}
	start := sessionStart{id: session, definitionID: DefinitionID(), transport: e.cfg.Transport, protocol: protocol, routes: routes,
		mainModel: e.cfg.MainModel, freeze: freeze}
	l = &ledger{}
	// A session a need starts (no freeze) is queued like a frozen one: its
	// first answer waits for no write either. Only a resumed session's row
	// is written now.
	if (freeze == nil || fresh) && e.acct.enqueue(accountItem{sessions: []sessionStart{start}}) {
		l.queued = session
	} else if err := e.store.startSession(ctx, start); err != nil {
		return nil, false, err
	}
	e.ledgers[session] = l
	return l, false, nil
}

// storedSession waits until a session whose row was queued is written;
// what writes a row that refers to the session (a change, a worker's
// answer) or reads what it froze calls it first.
func (e *Engine) storedSession(ctx context.Context, l *ledger) error {
	if l.queued == "" {
		return nil
	}
	if err := e.acct.flush(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	ok, err := e.store.hasSession(ctx, l.queued)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Op: "engine.session", Kind: kindStore, Err: fmt.Errorf("session %s could not be stored", l.queued)}
	}
	l.queued = ""
	return nil
}

// sessionProfile is the role-profile revision a session froze; a session
// that froze none (the API, the CLI) uses the newest default revision.
func (e *Engine) sessionProfile(ctx context.Context, session string) (ProfileRevision, error) {
	rev, ok, err := e.store.sessionProfile(ctx, session)
	if ok || err != nil {
		return rev, err
	}
	return e.Profile(ctx, DefaultProfileID)
}

// fifo is a lock granted in arrival order: one resolution is active, the
// others wait their turn (a sync.Mutex makes no ordering promise).
type fifo struct {
	mu    sync.Mutex
	busy  bool
	queue []chan struct{}
}

func (f *fifo) lock(ctx context.Context) error {
	f.mu.Lock()
	if !f.busy {
		f.busy = true
		f.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	f.queue = append(f.queue, ch)
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for i, c := range f.queue {
			if c == ch {
				f.queue = append(f.queue[:i], f.queue[i+1:]...)
				f.mu.Unlock()
				return ctx.Err()
			}
		}
		f.mu.Unlock()
		f.unlock() // the turn was handed to us as we gave up: pass it on
		return ctx.Err()
	}
}

func (f *fifo) unlock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) == 0 {
		f.busy = false
		return
	}
	next := f.queue[0]
	f.queue = f.queue[1:]
	close(next)
}

// sinceMs returns the milliseconds since t.
func sinceMs(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// opError wraps a non-domain failure of a resolution step.
func opError(op string, err error) error {
	if _, ok := err.(*Error); ok {
		return err
	}
	return &Error{Op: op, Kind: kindOther, Err: fmt.Errorf("%w", err)}
}

// inside reports whether path lies in (or is) dir, after resolving both.
func inside(dir, path string) bool {
	p, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "..")
}
