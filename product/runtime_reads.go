package product

import (
	"context"

	"github.com/needle-dev/needle/product/web"
)

// The runtime's reads for its /api/v1 handlers. The handlers
// (runtime_api*.go) decode a request, call these or an engine's methods,
// and encode the answer; they never reach the store themselves.

// accounting builds web.Accounting; the series only when asked (the event
// stream sends totals).
func (rt *Runtime) accounting(ctx context.Context, series bool) (web.Accounting, error) {
	eid := rt.broker.LastID()
	t, err := rt.store.accounting(ctx)
	if err != nil {
		return web.Accounting{}, err
	}
	a := web.Accounting{Resolutions: t.Resolutions, Hits: t.Hits, WorkerRuns: t.WorkerRuns, TokensSpent: t.TokensSpent,
		TokensSaved: t.TokensSaved, TokensBaseline: t.TokensSpent + t.TokensSaved, ByKind: map[string]int64{},
		Series: []web.AccountingPoint{}, EventID: eid}
	if t.Resolutions > 0 {
		a.HitRate = float64(t.Hits) / float64(t.Resolutions)
	}
	for k, n := range t.ByKind {
		a.ByKind[string(k)] = n
	}
	if !series {
		return a, nil
	}
	points, err := rt.store.accountingSeries(ctx, accountingSeriesPoints)
	if err != nil {
		return web.Accounting{}, err
	}
	for _, p := range points {
		a.Series = append(a.Series, web.AccountingPoint{At: p.At.UTC(), Resolutions: p.Resolutions, Hits: p.Hits,
			TokensSpent: p.TokensSpent, TokensSaved: p.TokensSaved})
	}
	return a, nil
}

// needFeed is the need feed: resolutions before the cursor, newest first.
func (rt *Runtime) needFeed(ctx context.Context, before int64, limit int) ([]feedRow, error) {
	return rt.store.resolutionFeed(ctx, before, limit)
}

// artifactRecord is one stored artifact with its certificate.
func (rt *Runtime) artifactRecord(ctx context.Context, id string) (artifactRecord, error) {
	return rt.store.artifactRecord(ctx, id)
}

// lifecycleEngine finds the lifecycle named by id (lcy_… or chg_…) and
// the engine of its repository.
func (rt *Runtime) lifecycleEngine(ctx context.Context, id string) (*Engine, string, error) {
	if !lifecycleOrChange.MatchString(id) {
		return nil, "", invalidf("api.lifecycle", "id", "not a lifecycle id (lcy_ or chg_ and 24 hex digits)")
	}
	ref, err := rt.store.lifecycleRef(ctx, id)
	if err != nil {
		return nil, "", err
	}
	e, err := rt.rootEngine(ctx, ref.Root)
	return e, ref.ID, err
}

// lifecyclePage is a page of lifecycles after the cursor, newest first.
func (rt *Runtime) lifecyclePage(ctx context.Context, afterUpdated, afterID string, limit int) ([]lifecycleRef, error) {
	return rt.store.lifecyclePage(ctx, afterUpdated, afterID, limit)
}

// approval is a recorded approval.
func (rt *Runtime) approval(ctx context.Context, id string) (approvalRow, bool, error) {
	return rt.store.approval(ctx, id)
}
