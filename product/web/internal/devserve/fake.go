package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/web"
)

// fakeAPI is a working in-memory implementation of the /api/v1 contract:
// it keeps state, validates input, enforces the approval digests and the
// drift check, and publishes stream events. It stands in for the engine
// until the runtime's real handlers exist; nothing here is product code.
type fakeAPI struct {
	broker *sse.Broker
	now    func() time.Time

	mu          sync.Mutex
	resolutions []web.ResolutionSummary // ascending id
	evidence    map[string]web.EvidenceDetail
	lifecycles  map[string]*fakeLifecycle
	approvals   map[string]web.Approval
	started     time.Time
}

type fakeLifecycle struct {
	summary      web.LifecycleSummary
	phases       []web.PhaseState
	patch        *web.Patch
	verification *web.Verification
	events       []web.LifecycleEvent
	drift        []string // work-tree paths changed under the patch
}

var phases = []string{"explore", "implement", "test", "review", "verify", "apply"}

// digest is the fake's content address ("b3:" + 64 hex; sha256 here, the
// product uses BLAKE3).
func digest(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "b3:" + hex.EncodeToString(h[:])
}

func newFakeAPI(b *sse.Broker, now func() time.Time) *fakeAPI {
	return &fakeAPI{broker: b, now: now, started: now(), evidence: map[string]web.EvidenceDetail{}, lifecycles: map[string]*fakeLifecycle{}, approvals: map[string]web.Approval{}}
}

func (f *fakeAPI) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/status", f.status)
	mux.HandleFunc("GET /api/v1/needs", f.needs)
	mux.HandleFunc("GET /api/v1/evidence/{id}", f.evidenceDetail)
	mux.HandleFunc("GET /api/v1/accounting", f.accountingRoute)
	mux.HandleFunc("GET /api/v1/lifecycles", f.lifecycleList)
	mux.HandleFunc("GET /api/v1/lifecycles/{id}", f.lifecycleDetail)
	mux.HandleFunc("GET /api/v1/lifecycles/{id}/events", f.lifecycleEvents)
	mux.HandleFunc("POST /api/v1/lifecycles/{id}/approvals", f.approve)
	mux.HandleFunc("POST /api/v1/lifecycles/{id}/apply", f.apply)
	mux.Handle("GET /api/v1/events", f.broker)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route", nil)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, kind, msg string, c *web.Conflict) {
	writeJSON(w, status, web.Error{Error: web.ErrorDetail{Kind: kind, Message: msg, Conflict: c}})
}

// decode reads a bounded JSON body strictly: unknown fields and trailing
// data are invalid input.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_input", "body: "+err.Error(), nil)
		return false
	}
	return true
}

// pageArgs reads limit (bounded) and an opaque cursor (a decimal offset).
func pageArgs(w http.ResponseWriter, r *http.Request) (limit, offset int, ok bool) {
	limit = web.DefaultPageSize
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > web.MaxPageSize {
			writeError(w, http.StatusBadRequest, "invalid_input", fmt.Sprintf("limit: want 1 to %d", web.MaxPageSize), nil)
			return 0, 0, false
		}
		limit = n
	}
	if s := q.Get("cursor"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "invalid_input", "cursor: not one of ours", nil)
			return 0, 0, false
		}
		offset = n
	}
	return limit, offset, true
}

func page[T any](items []T, limit, offset int, eventID string) web.Page[T] {
	p := web.Page[T]{Items: []T{}, EventID: eventID}
	if offset < len(items) {
		end := min(offset+limit, len(items))
		p.Items = items[offset:end]
		if end < len(items) {
			p.NextCursor = strconv.Itoa(end)
		}
	}
	return p
}

func (f *fakeAPI) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, web.Status{Version: "devserve", Schema: 0, StartedAt: f.started, EventID: f.broker.LastID()})
}

func (f *fakeAPI) needs(w http.ResponseWriter, r *http.Request) {
	limit, offset, ok := pageArgs(w, r)
	if !ok {
		return
	}
	eid := f.broker.LastID() // before the read: see web.Page
	f.mu.Lock()
	items := slices.Clone(f.resolutions)
	f.mu.Unlock()
	slices.Reverse(items)
	writeJSON(w, 200, page(items, limit, offset, eid))
}

func (f *fakeAPI) evidenceDetail(w http.ResponseWriter, r *http.Request) {
	eid := f.broker.LastID()
	f.mu.Lock()
	ev, ok := f.evidence[r.PathValue("id")]
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such artifact", nil)
		return
	}
	ev.Freshness.CheckedAt = f.now().UTC()
	ev.EventID = eid
	writeJSON(w, 200, ev)
}

func (f *fakeAPI) accounting() web.Accounting {
	a := web.Accounting{ByKind: map[string]int64{}, Series: []web.AccountingPoint{}}
	for _, r := range f.resolutions {
		a.Resolutions++
		a.ByKind[r.Kind]++
		if r.Hit {
			a.Hits++
		}
		if r.WorkerSpawned {
			a.WorkerRuns++
		}
		a.TokensSpent += r.TokensSpent
		a.TokensSaved += r.TokensSaved
		a.Series = append(a.Series, web.AccountingPoint{At: r.At, Resolutions: 1, Hits: b2i(r.Hit), TokensSpent: r.TokensSpent, TokensSaved: r.TokensSaved})
	}
	a.TokensBaseline = a.TokensSpent + a.TokensSaved
	if a.Resolutions > 0 {
		a.HitRate = float64(a.Hits) / float64(a.Resolutions)
	}
	// Cumulative hit rate per point, so the chart reads as "over time".
	var res, hits int64
	for i := range a.Series {
		res += a.Series[i].Resolutions
		hits += a.Series[i].Hits
		a.Series[i].Resolutions, a.Series[i].Hits = res, hits
	}
	if len(a.Series) > 200 {
		a.Series = a.Series[len(a.Series)-200:]
	}
	return a
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (f *fakeAPI) accountingRoute(w http.ResponseWriter, r *http.Request) {
	eid := f.broker.LastID()
	f.mu.Lock()
	a := f.accounting()
	f.mu.Unlock()
	a.EventID = eid
	writeJSON(w, 200, a)
}

func (f *fakeAPI) lifecycleList(w http.ResponseWriter, r *http.Request) {
	limit, offset, ok := pageArgs(w, r)
	if !ok {
		return
	}
	eid := f.broker.LastID()
	f.mu.Lock()
	var items []web.LifecycleSummary
	for _, l := range f.lifecycles {
		items = append(items, l.summary)
	}
	f.mu.Unlock()
	slices.SortFunc(items, func(a, b web.LifecycleSummary) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ChangeID, b.ChangeID)
	})
	writeJSON(w, 200, page(items, limit, offset, eid))
}

// lifecycle finds the lifecycle of the request, or answers 404.
func (f *fakeAPI) lifecycle(w http.ResponseWriter, r *http.Request) *fakeLifecycle {
	l, ok := f.lifecycles[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such lifecycle", nil)
	}
	return l
}

// current returns the digests an approval of l must bind now.
func (l *fakeLifecycle) current() web.ApprovalDigests {
	d := web.ApprovalDigests{Lifecycle: l.summary.StateDigest}
	if l.patch != nil {
		d.Patch = l.patch.PatchID
	}
	if l.verification != nil {
		d.Verification = l.verification.VerificationID
	}
	return d
}

func (f *fakeAPI) lifecycleDetail(w http.ResponseWriter, r *http.Request) {
	eid := f.broker.LastID()
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lifecycle(w, r)
	if l == nil {
		return
	}
	d := web.LifecycleDetail{Summary: l.summary, Phases: l.phases, Patch: l.patch, Verification: l.verification, EventID: eid}
	d.Approval.Awaiting = l.summary.Status == "awaiting_approval"
	if d.Approval.Awaiting {
		d.Approval.Digests = l.current()
	}
	writeJSON(w, 200, d)
}

func (f *fakeAPI) lifecycleEvents(w http.ResponseWriter, r *http.Request) {
	limit, _, ok := pageArgs(w, r)
	if !ok {
		return
	}
	after, err := strconv.ParseInt(cmpOr(r.URL.Query().Get("after"), "0"), 10, 64)
	if err != nil || after < 0 {
		writeError(w, http.StatusBadRequest, "invalid_input", "after: want a sequence number", nil)
		return
	}
	eid := f.broker.LastID()
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lifecycle(w, r)
	if l == nil {
		return
	}
	var items []web.LifecycleEvent
	for _, e := range l.events {
		if e.Seq > after {
			items = append(items, e)
		}
	}
	p := page(items, limit, 0, eid)
	if len(items) > limit {
		p.NextCursor = strconv.FormatInt(items[limit-1].Seq, 10) // resume with after=
	}
	writeJSON(w, 200, p)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (f *fakeAPI) approve(w http.ResponseWriter, r *http.Request) {
	var req web.ApprovalRequest
	if !decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lifecycle(w, r)
	if l == nil {
		return
	}
	cur := l.current()
	if l.summary.Status != "awaiting_approval" {
		writeError(w, http.StatusConflict, "conflict", "the lifecycle is not awaiting approval", &web.Conflict{Reason: "wrong_phase", Expected: req.Digests, Actual: cur, Paths: []string{}})
		return
	}
	if req.Digests != cur {
		writeError(w, http.StatusConflict, "conflict", "the approved digests are not the change's current ones", &web.Conflict{Reason: "digest_mismatch", Expected: req.Digests, Actual: cur, Paths: []string{}})
		return
	}
	now := f.now().UTC()
	a := web.Approval{ApprovalID: "apr_" + digest(l.summary.ChangeID, now.String())[3:27], ChangeID: l.summary.ChangeID, Digests: cur, ApprovedAt: now}
	f.approvals[a.ApprovalID] = a
	f.appendEvent(l, "approval", "", "", "user approved patch, verification and lifecycle digests")
	writeJSON(w, http.StatusCreated, a)
}

func (f *fakeAPI) apply(w http.ResponseWriter, r *http.Request) {
	var req web.ApplyRequest
	if !decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lifecycle(w, r)
	if l == nil {
		return
	}
	a, ok := f.approvals[req.ApprovalID]
	if !ok || a.ChangeID != l.summary.ChangeID {
		writeError(w, http.StatusNotFound, "not_found", "no such approval for this change", nil)
		return
	}
	cur := l.current()
	switch {
	case l.summary.Status != "awaiting_approval":
		writeError(w, http.StatusConflict, "conflict", "the lifecycle is not awaiting approval", &web.Conflict{Reason: "wrong_phase", Expected: a.Digests, Actual: cur, Paths: []string{}})
		return
	case a.Digests != cur:
		writeError(w, http.StatusConflict, "conflict", "the change moved after the approval", &web.Conflict{Reason: "digest_mismatch", Expected: a.Digests, Actual: cur, Paths: []string{}})
		return
	case len(l.drift) > 0:
		writeError(w, http.StatusConflict, "conflict", "the work tree drifted from the patch's base", &web.Conflict{Reason: "work_tree_drift", Expected: a.Digests, Actual: cur, Paths: slices.Clone(l.drift)})
		return
	}
	l.summary.Status = "applied"
	l.phases[len(l.phases)-1].Status = "done"
	f.appendEvent(l, "apply", "apply", "applied", fmt.Sprintf("patch applied to %d file(s)", len(l.patch.Files)))
	writeJSON(w, 200, web.ApplyResult{ChangeID: l.summary.ChangeID, PatchID: l.patch.PatchID, Files: len(l.patch.Files), AppliedAt: f.now().UTC()})
}

// appendEvent journals an event on l, moves its state digest and
// publishes the change. f.mu is held.
func (f *fakeAPI) appendEvent(l *fakeLifecycle, kind, from, to, summary string) {
	now := f.now().UTC()
	e := web.LifecycleEvent{Seq: int64(len(l.events) + 1), At: now, Kind: kind, From: from, To: to, Summary: summary}
	e.PayloadDigest = digest(l.summary.ChangeID, strconv.FormatInt(e.Seq, 10), kind, summary)
	l.events = append(l.events, e)
	l.summary.Events = len(l.events)
	l.summary.UpdatedAt = now
	// An approval is recorded beside the lifecycle, not a transition of it:
	// the lifecycle digest it binds must survive its own recording.
	if kind != "approval" {
		l.summary.StateDigest = digest(l.summary.StateDigest, e.PayloadDigest)
	}
	data, _ := json.Marshal(web.LifecycleChange{Summary: l.summary, Event: e})
	f.broker.Publish(web.EventLifecycle, data)
}

// AddResolution records a resolution and publishes it.
func (f *fakeAPI) AddResolution(r web.ResolutionSummary) web.ResolutionSummary {
	f.mu.Lock()
	r.ResolutionID = int64(len(f.resolutions) + 1)
	if r.At.IsZero() {
		r.At = f.now().UTC()
	}
	if r.ArtifactIDs == nil {
		r.ArtifactIDs = []string{}
	}
	f.resolutions = append(f.resolutions, r)
	a := f.accounting()
	f.mu.Unlock()
	data, _ := json.Marshal(r)
	f.broker.Publish(web.EventResolution, data)
	a.Series = nil
	data, _ = json.Marshal(a)
	f.broker.Publish(web.EventAccounting, data)
	return r
}

// Drift marks paths of change id as changed in the work tree.
func (f *fakeAPI) Drift(id string, paths ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lifecycles[id].drift = paths
}
