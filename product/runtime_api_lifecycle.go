package product

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/web"
)

// The lifecycle routes of /api/v1. A lifecycle belongs to one repository
// of the data directory; the runtime finds its root in the store and runs
// the same engine methods the needle change commands run (Lifecycle,
// LifecycleEvents, Approve, Apply) on an engine of that root over its
// store: every read replays and checks the journal first, and an approval
// or apply follows the CLI's rules exactly. The handlers only project.

// maxBody bounds a POST body.
const maxBody = 64 << 10

// engines keeps one engine per repository root over the runtime's store,
// for the lifecycle routes (an engine only reads and writes through the
// store and the root it names; it holds nothing else).
type engines struct {
	mu sync.Mutex
	m  map[string]*Engine
}

// maxEngines bounds the engines kept; past it they are opened afresh.
const maxEngines = 32

// rootEngine returns the engine of a repository root of the data directory.
func (rt *Runtime) rootEngine(ctx context.Context, root string) (*Engine, error) {
	rt.roots.mu.Lock()
	defer rt.roots.mu.Unlock()
	if e, ok := rt.roots.m[root]; ok {
		return e, nil
	}
	e, err := rt.engine(ctx, Config{DataDir: rt.dataDir, Repository: root, CacheOnly: true, Transport: "api"})
	if err != nil {
		return nil, err
	}
	if rt.roots.m == nil || len(rt.roots.m) >= maxEngines {
		rt.roots.m = map[string]*Engine{}
	}
	rt.roots.m[root] = e
	return e, nil
}

// lifecycleCursor spells the (updated_at, lifecycle_id) position of a page
// boundary, opaquely.
func lifecycleCursor(r lifecycleRef) string {
	return "l" + base64.RawURLEncoding.EncodeToString([]byte(r.UpdatedAt+" "+r.ID))
}

func parseLifecycleCursor(s string) (updated, id string, err error) {
	bad := invalidf("api.page", "cursor", "not a cursor this server gave")
	b, ok := strings.CutPrefix(s, "l")
	raw, derr := base64.RawURLEncoding.DecodeString(b)
	if !ok || derr != nil {
		return "", "", bad
	}
	updated, id, ok = strings.Cut(string(raw), " ")
	if _, terr := time.Parse(time.RFC3339Nano, updated); !ok || terr != nil || !strings.HasPrefix(id, "lcy_") || !lifecycleOrChange.MatchString(id) {
		return "", "", bad
	}
	return updated, id, nil
}

// getLifecycles lists the lifecycles of every repository, most recently
// updated first, each replayed and checked: one that does not check is
// listed as corrupt.
func (rt *Runtime) getLifecycles(w http.ResponseWriter, r *http.Request) error {
	limit, err := limitArg(r)
	if err != nil {
		return err
	}
	var afterUpdated, afterID string
	if c := r.URL.Query().Get("cursor"); c != "" {
		if afterUpdated, afterID, err = parseLifecycleCursor(c); err != nil {
			return err
		}
	}
	eid := rt.broker.LastID()
	refs, err := rt.lifecyclePage(r.Context(), afterUpdated, afterID, limit+1)
	if err != nil {
		return err
	}
	page := web.Page[web.LifecycleSummary]{Items: []web.LifecycleSummary{}, EventID: eid}
	for i, ref := range refs {
		if i == limit {
			page.NextCursor = lifecycleCursor(refs[i-1])
			break
		}
		s, err := rt.lifecycleSummary(r.Context(), ref)
		if err != nil {
			return err
		}
		page.Items = append(page.Items, s)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// lifecycleSummary replays a lifecycle and projects its summary, or the
// corrupt one when it does not check.
func (rt *Runtime) lifecycleSummary(ctx context.Context, ref lifecycleRef) (web.LifecycleSummary, error) {
	e, err := rt.rootEngine(ctx, ref.Root)
	if err != nil {
		return web.LifecycleSummary{}, err
	}
	v, err := e.readLifecycle(ctx, ref.ID)
	if KindOf(err) == kindIntegrity {
		return lifecycleSummaryDTO(corruptSummary(ref, err)), nil
	}
	if err != nil {
		return web.LifecycleSummary{}, err
	}
	return lifecycleSummaryDTO(summaryOf(v)), nil
}

func lifecycleSummaryDTO(s LifecycleSummary) web.LifecycleSummary {
	updated, _ := time.Parse(time.RFC3339Nano, s.UpdatedAt)
	out := web.LifecycleSummary{LifecycleID: s.ID, ChangeID: s.ChangeID, Task: safeText(s.Task, web.MaxTextBytes),
		Phase: string(s.Phase), Status: string(s.Status), Reason: string(s.Reason), Round: s.Round, UpdatedAt: updated.UTC(),
		Events: s.Seq, StateDigest: s.StateDigest}
	if s.Corrupt != "" {
		out.Corrupt = publicMessage(errors.New(s.Corrupt))
	}
	return out
}

// phaseStates places each phase of the fixed order relative to where the
// lifecycle stands.
func phaseStates(s LifecycleSummary) []web.PhaseState {
	at := 0
	for i, p := range lifecycle.Phases {
		if p == s.Phase {
			at = i
		}
	}
	out := make([]web.PhaseState, len(lifecycle.Phases))
	for i, p := range lifecycle.Phases {
		st := "pending"
		switch {
		case s.Status == lifecycle.StatusApplied || i < at:
			st = "done"
		case i == at && s.Status.Terminal():
			st = "failed"
		case i == at:
			st = "active"
		case s.Status.Terminal():
			st = "skipped"
		}
		out[i] = web.PhaseState{Phase: string(p), Status: st}
	}
	return out
}

// getLifecycle is one lifecycle in full, replayed and checked.
func (rt *Runtime) getLifecycle(w http.ResponseWriter, r *http.Request) error {
	eid := rt.broker.LastID()
	d, err := rt.lifecycleDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d.EventID = eid
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (rt *Runtime) lifecycleDetail(ctx context.Context, id string) (web.LifecycleDetail, error) {
	e, lid, err := rt.lifecycleEngine(ctx, id)
	if err != nil {
		return web.LifecycleDetail{}, err
	}
	d, err := e.Lifecycle(ctx, lid)
	if err != nil {
		return web.LifecycleDetail{}, err
	}
	out := web.LifecycleDetail{Summary: lifecycleSummaryDTO(d.LifecycleSummary), Phases: phaseStates(d.LifecycleSummary),
		Criteria: []string{}, Acceptance: acceptanceDTO(d), Tests: []web.TestOutcome{}, Review: reviewDTO(d)}
	for _, c := range d.Criteria {
		out.Criteria = append(out.Criteria, c.Digest)
	}
	for _, t := range d.TestPlans {
		out.Tests = append(out.Tests, web.TestOutcome{Test: t.Test, Command: safeText(t.Command, web.MaxTextBytes),
			Outcome: string(t.Outcome), DurationMS: t.DurationMs})
	}
	if p := d.Patch; p != nil {
		out.Patch = &web.Patch{PatchID: p.PatchID, Revision: p.Round, Files: []web.PatchFile{}}
		for _, op := range p.Operations {
			out.Patch.Files = append(out.Patch.Files, web.PatchFile{Path: op.Path, Op: string(op.Op), Bytes: op.Bytes})
		}
		if out.Diff, err = diffDTO(ctx, e, lid, p.PatchID); err != nil {
			return web.LifecycleDetail{}, err
		}
	}
	if v := d.Verification; v != nil {
		out.Verification = &web.Verification{VerificationID: v.VerificationID, Verdict: string(v.Verdict), Criteria: []web.Criterion{}}
		for _, c := range v.Criteria {
			digest := ""
			if c.Criterion >= 1 && c.Criterion <= len(out.Criteria) {
				digest = out.Criteria[c.Criterion-1]
			}
			out.Verification.Criteria = append(out.Verification.Criteria, web.Criterion{Digest: digest, Status: string(c.Status),
				Reason: workerText(c.Reason)})
		}
	}
	if b := d.AwaitingApproval; b != nil {
		out.Approval = web.ApprovalState{Awaiting: true, Digests: web.ApprovalDigests{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}}
	}
	if d.ApprovalID != "" {
		a, err := rt.approvalDTO(ctx, e, lid, d.ApprovalID)
		if err != nil {
			return web.LifecycleDetail{}, err
		}
		out.Approval.Approval = &a
	}
	if a := d.Apply; a != nil {
		out.Apply = &web.ApplyState{Status: a.Status, Cause: a.Cause, Paths: append([]string{}, a.Paths...)}
	}
	return out, nil
}

// approvalDTO projects a recorded approval, dated by its journal event.
func (rt *Runtime) approvalDTO(ctx context.Context, e *Engine, lid, approvalID string) (web.Approval, error) {
	row, ok, err := rt.approval(ctx, approvalID)
	if err != nil {
		return web.Approval{}, err
	}
	if !ok {
		return web.Approval{}, &Error{Op: "api.lifecycle", Kind: kindStore, Err: errors.New("the lifecycle's approval is not stored")}
	}
	a := web.Approval{ApprovalID: row.ID, ChangeID: row.ChangeID,
		Digests: web.ApprovalDigests{Patch: row.Patch, Verification: row.Verification, Lifecycle: row.Subject}}
	events, err := e.LifecycleEvents(ctx, lid)
	if err != nil {
		return web.Approval{}, err
	}
	for _, ev := range events {
		if ev.Kind == lifecycle.EventApprovalGranted {
			at, _ := time.Parse(time.RFC3339Nano, ev.At)
			a.ApprovedAt = at.UTC()
		}
	}
	return a, nil
}

// getLifecycleEvents is a lifecycle's journal in seq order, after ?after=.
func (rt *Runtime) getLifecycleEvents(w http.ResponseWriter, r *http.Request) error {
	limit, err := limitArg(r)
	if err != nil {
		return err
	}
	after := 0
	if s := r.URL.Query().Get("after"); s != "" {
		if after, err = strconv.Atoi(s); err != nil || after < 0 {
			return invalidf("api.page", "after", "want a sequence number")
		}
	}
	eid := rt.broker.LastID()
	e, lid, err := rt.lifecycleEngine(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	events, err := e.LifecycleEvents(r.Context(), lid)
	if err != nil {
		return err
	}
	page := web.Page[web.LifecycleEvent]{Items: []web.LifecycleEvent{}, EventID: eid}
	for _, ev := range events {
		if ev.Seq <= after {
			continue
		}
		if len(page.Items) == limit {
			page.NextCursor = strconv.Itoa(int(page.Items[limit-1].Seq)) // resume with ?after=
			break
		}
		page.Items = append(page.Items, lifecycleEventDTO(ev))
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func lifecycleEventDTO(ev lifecycleEventView) web.LifecycleEvent {
	at, _ := time.Parse(time.RFC3339Nano, ev.At)
	out := web.LifecycleEvent{Seq: int64(ev.Seq), At: at.UTC(), Kind: string(ev.Kind), Phase: string(ev.Phase), Status: string(ev.Status),
		Summary: safeText(ev.Summary, web.MaxTextBytes), PayloadDigest: ev.PayloadDigest, StateDigest: ev.StateDigest}
	if ev.Detail != "" {
		d := workerText(ev.Detail)
		out.Detail = &d
	}
	return out
}

// decodeBody reads a bounded JSON body strictly into v.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return &Error{Op: "api.body", Kind: kindIO, Err: err}
	}
	if len(data) > maxBody {
		return invalidf("api.body", "$", "body larger than %d bytes", maxBody)
	}
	if _, err := parseJSONTree(data); err != nil { // duplicate keys, trailing data, …
		return err
	}
	if err := decodeStrict(data, v); err != nil {
		return invalidf("api.body", "$", "%v", err)
	}
	return nil
}

// decodeFor reads a request's body into a T and finds the engine of the
// lifecycle its path names.
func decodeFor[T any](rt *Runtime, r *http.Request) (req T, e *Engine, lid string, err error) {
	if err = decodeBody(r, &req); err != nil {
		return req, nil, "", err
	}
	e, lid, err = rt.lifecycleEngine(r.Context(), r.PathValue("id"))
	return req, e, lid, err
}

// apiConflict is a 409 with its explanation.
func apiConflict(reason, msg string, expected, actual web.ApprovalDigests, paths []string) error {
	if paths == nil {
		paths = []string{}
	}
	return &Error{Op: "api.lifecycle", Kind: kindConflict, Err: &conflictError{msg: msg,
		conflict: web.Conflict{Reason: reason, Expected: expected, Actual: actual, Paths: paths}}}
}

// postApproval approves the digests the user was shown: they must be the
// lifecycle's current ones (409 digest_mismatch) while it awaits approval
// (409 wrong_phase); the engine's Approve checks them again and records
// the approval, as needle change approve does.
func (rt *Runtime) postApproval(w http.ResponseWriter, r *http.Request) error {
	req, e, lid, err := decodeFor[web.ApprovalRequest](rt, r)
	if err != nil {
		return err
	}
	d, err := e.Lifecycle(r.Context(), lid)
	if err != nil {
		return err
	}
	if d.AwaitingApproval == nil {
		return apiConflict("wrong_phase", "the lifecycle is "+string(d.Status)+", not awaiting approval; nothing was recorded", req.Digests, web.ApprovalDigests{}, nil)
	}
	b := d.AwaitingApproval
	cur := web.ApprovalDigests{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}
	if req.Digests != cur {
		return apiConflict("digest_mismatch", "the approved digests are not the lifecycle's current ones; nothing was recorded", req.Digests, cur, nil)
	}
	res, err := e.Approve(r.Context(), lid, ApprovalRequest{Patch: cur.Patch, Verification: cur.Verification, Lifecycle: cur.Lifecycle, By: "http"})
	if KindOf(err) == kindConflict {
		return apiConflict("moved", publicMessage(err), req.Digests, web.ApprovalDigests{}, nil)
	}
	if err != nil {
		return err
	}
	a, err := rt.approvalDTO(r.Context(), e, lid, res.ApprovalID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, a)
	return nil
}

// postCancel cancels a lifecycle as needle change cancel does: the work in
// flight (a runner in this runtime, or in another process) is interrupted
// and cleaned up before the answer, the cancelled lifecycle's detail.
func (rt *Runtime) postCancel(w http.ResponseWriter, r *http.Request) error {
	req, e, lid, err := decodeFor[web.CancelRequest](rt, r)
	if err != nil {
		return err
	}
	if _, err := e.CancelLifecycle(r.Context(), lid, safeText(req.Note, web.MaxTextBytes)); err != nil {
		return err
	}
	eid := rt.broker.LastID()
	d, err := rt.lifecycleDetail(r.Context(), lid)
	if err != nil {
		return err
	}
	d.EventID = eid
	writeJSON(w, http.StatusOK, d)
	return nil
}

// postApply applies the lifecycle's approved patch, as needle change apply
// does: a work tree that drifted from the patch's base is a 409
// work_tree_drift naming the paths, and nothing is written. A repeated
// apply of an applied lifecycle answers 200 with the first apply's
// outcome and time.
func (rt *Runtime) postApply(w http.ResponseWriter, r *http.Request) error {
	req, e, lid, err := decodeFor[web.ApplyRequest](rt, r)
	if err != nil {
		return err
	}
	d, err := e.Lifecycle(r.Context(), lid)
	if err != nil {
		return err
	}
	if d.ApprovalID == "" || d.ApprovalID != req.ApprovalID {
		return apiConflict("wrong_phase", "the lifecycle is "+string(d.Status)+" and not approved with approval "+safeText(req.ApprovalID, 80)+"; nothing was written",
			web.ApprovalDigests{}, web.ApprovalDigests{}, nil)
	}
	approved, err := rt.approvalDTO(r.Context(), e, lid, d.ApprovalID)
	if err != nil {
		return err
	}
	res, err := e.Apply(r.Context(), lid)
	if KindOf(err) == kindConflict {
		// The approval still holds (expected and actual): the work tree,
		// or the lifecycle, moved.
		paths, derr := rt.driftedPaths(r.Context(), e, lid)
		if derr != nil {
			return derr
		}
		if len(paths) > 0 {
			return apiConflict("work_tree_drift", publicMessage(err), approved.Digests, approved.Digests, paths)
		}
		return apiConflict("moved", publicMessage(err), approved.Digests, web.ApprovalDigests{}, nil)
	}
	if err != nil {
		return err
	}
	applied, _ := time.Parse(time.RFC3339Nano, res.AppliedAt)
	out := web.ApplyResult{ChangeID: res.ChangeID, PatchID: res.PatchID, Files: len(res.Paths), AppliedAt: applied.UTC()}
	for _, n := range res.Notes {
		out.Notes = append(out.Notes, safeText(n, web.MaxTextBytes))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// driftedPaths are the paths of the lifecycle's last journaled apply
// conflict, when that is its newest event.
func (rt *Runtime) driftedPaths(ctx context.Context, e *Engine, lid string) ([]string, error) {
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return nil, err
	}
	if n := len(v.Events); n > 0 {
		if c, ok := v.Events[n-1].(lifecycle.ApplyConflicted); ok {
			return append([]string{}, c.Paths...), nil
		}
	}
	return nil, nil
}
