package product

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/web"
)

// The /api/v1 handlers. Each decodes its request, reads the store through
// the runtime, and answers an explicit DTO of product/web: a projection
// that names repository-relative paths, content ids and bounded text
// Needle wrote — never a stored record, a host path, a transcript, a
// credential or a model's raw output. What a worker wrote freely (a flow
// step's description, a failed run's report) is only ever a web.WorkerText
// (workerText), labelled unverified. The DTOs live in package web, which
// cannot import product, so no domain type can slip into a response.

// accountingSeriesPoints bounds the accounting series.
const accountingSeriesPoints = 200

// apiRoute is one route of the API.
type apiRoute struct {
	pattern string
	handle  func(rt *Runtime, w http.ResponseWriter, r *http.Request) error
}

// apiRoutes is the API's route table.
var apiRoutes = []apiRoute{
	{"GET /api/v1/status", (*Runtime).getStatus},
	{"GET /api/v1/needs", (*Runtime).getNeeds},
	{"GET /api/v1/evidence/{artifact_id}", (*Runtime).getEvidence},
	{"GET /api/v1/accounting", (*Runtime).getAccounting},
	{"GET /api/v1/lifecycles", (*Runtime).getLifecycles}, // runtime_api_lifecycle.go
	{"GET /api/v1/lifecycles/{id}", (*Runtime).getLifecycle},
	{"GET /api/v1/lifecycles/{id}/events", (*Runtime).getLifecycleEvents},
	{"POST /api/v1/lifecycles/{id}/approvals", (*Runtime).postApproval},
	{"POST /api/v1/lifecycles/{id}/apply", (*Runtime).postApply},
	{"POST /api/v1/lifecycles/{id}/cancel", (*Runtime).postCancel},
}

// apiHandler serves the API routes, the event stream and JSON 404s.
func (rt *Runtime) apiHandler() http.Handler {
	mux := http.NewServeMux()
	for _, route := range apiRoutes {
		mux.HandleFunc(route.pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := route.handle(rt, w, r); err != nil {
				rt.writeError(w, r, err)
			}
		})
	}
	mux.Handle("GET /api/v1/events", rt.broker)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		rt.writeError(w, r, &Error{Op: "api", Kind: kindNotFound, Err: errors.New("no such route")})
	})
	return mux
}

// webHandler is what the loopback HTTP server serves behind the guard:
// the API, logout, and the embedded UI.
func (rt *Runtime) webHandler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.HandleFunc("POST /api/v1/logout", func(w http.ResponseWriter, r *http.Request) {
		rt.guard.Logout(w, r)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", web.Handler())
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// writeError answers err with the HTTP status of its kind (errors.go);
// the message of a non-public kind stays in the log.
func (rt *Runtime) writeError(w http.ResponseWriter, r *http.Request, err error) {
	kind := KindOf(err)
	info := kind.info()
	detail := web.ErrorDetail{Kind: info.api, Message: "internal error"}
	var c *conflictError
	if errors.As(err, &c) {
		detail.Conflict = &c.conflict
	}
	if info.public {
		detail.Message = publicMessage(err)
	} else {
		rt.log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
	}
	writeJSON(w, info.http, web.Error{Error: detail})
}

// publicMessage is err's message without the operation prefix, bounded.
func publicMessage(err error) string {
	var e *Error
	msg := err.Error()
	if errors.As(err, &e) && e.Err != nil {
		msg = e.Err.Error()
		if e.Path != "" {
			msg = e.Path + ": " + msg
		}
	}
	return safeText(msg, web.MaxTextBytes)
}

// conflictError is a 409 with the web.Conflict that explains it.
type conflictError struct {
	msg      string
	conflict web.Conflict
}

func (e *conflictError) Error() string { return e.msg }

// safeText is s for a DTO: control characters blanked, bounded to n bytes
// at a rune boundary.
func safeText(s string, n int) string {
	return clip(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s), n)
}

// workerText labels free text a worker wrote for a DTO: bounded, control
// characters blanked, unverified.
func workerText(s string) web.WorkerText {
	return web.WorkerText{Text: safeText(s, web.MaxTextBytes), Unverified: true, Source: web.SourceWorker}
}

// limitArg reads ?limit= (1..web.MaxPageSize, default web.DefaultPageSize).
func limitArg(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return web.DefaultPageSize, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > web.MaxPageSize {
		return 0, invalidf("api.page", "limit", "want an integer from 1 to %d", web.MaxPageSize)
	}
	return n, nil
}

// pageArgs reads ?limit= and the feed's opaque ?cursor=, "c" + a decimal
// resolution id.
func pageArgs(r *http.Request) (limit int, cursor int64, err error) {
	if limit, err = limitArg(r); err != nil {
		return 0, 0, err
	}
	if s := r.URL.Query().Get("cursor"); s != "" {
		digits, ok := strings.CutPrefix(s, "c")
		n, err := strconv.ParseInt(digits, 10, 64)
		if !ok || err != nil || n < 1 || strconv.FormatInt(n, 10) != digits {
			return 0, 0, invalidf("api.page", "cursor", "not a cursor this server gave")
		}
		cursor = n
	}
	return limit, cursor, nil
}

func cursorOf(id int64) string { return "c" + strconv.FormatInt(id, 10) }

// StatusDTO is web.Status for this runtime.
func (rt *Runtime) getStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, web.Status{Version: Version(), Schema: schemaHead(), StartedAt: rt.started,
		EventID: rt.broker.LastID(), CommandsServed: rt.commands.Load()})
	return nil
}

// getNeeds is the need feed: recent resolutions, newest first.
func (rt *Runtime) getNeeds(w http.ResponseWriter, r *http.Request) error {
	limit, before, err := pageArgs(r)
	if err != nil {
		return err
	}
	eid := rt.broker.LastID() // before the read: see web.Page
	rows, err := rt.needFeed(r.Context(), before, limit+1)
	if err != nil {
		return err
	}
	page := web.Page[web.ResolutionSummary]{Items: []web.ResolutionSummary{}, EventID: eid}
	for i, row := range rows {
		if i == limit {
			page.NextCursor = cursorOf(rows[i-1].ID)
			break
		}
		page.Items = append(page.Items, resolutionDTO(row))
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// resolutionDTO projects a feed row.
func resolutionDTO(f feedRow) web.ResolutionSummary {
	return web.ResolutionSummary{
		ResolutionID: f.ID, At: f.At.UTC(), NeedID: f.NeedID, Route: string(f.Route),
		Subject: web.Subject{Kind: string(f.Subject.Kind), Name: safeText(f.Subject.Name, web.MaxTextBytes)},
		Kind:    string(f.Kind), Hit: slices.Contains(hitKinds, f.Kind), WorkerSpawned: f.WorkerSpawned,
		TokensSpent: f.Cost.TokensSpent, TokensSaved: f.Cost.TokensSaved, LatencyMS: f.Cost.LatencyMs,
		CertificateID: f.CertificateID, ArtifactIDs: append([]string{}, f.ArtifactIDs...),
	}
}

// getAccounting is the accounting totals with the series for the charts.
func (rt *Runtime) getAccounting(w http.ResponseWriter, r *http.Request) error {
	a, err := rt.accounting(r.Context(), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// getEvidence is one artifact with its certificate and dependencies, and
// its freshness checked against the current source now.
func (rt *Runtime) getEvidence(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("artifact_id")
	if !contentid.Valid(id) {
		return invalidf("api.evidence", "artifact_id", "not an artifact id (b3: and 64 hex digits)")
	}
	eid := rt.broker.LastID()
	rec, err := rt.artifactRecord(r.Context(), id)
	if err != nil {
		return err
	}
	d, err := evidenceDTO(r.Context(), rec, time.Now())
	if err != nil {
		return err
	}
	d.EventID = eid
	writeJSON(w, http.StatusOK, d)
	return nil
}

// evidenceDTO projects an artifact and checks its freshness at now: each
// dependency against the current source (read-only: nothing is recorded),
// then, if one changed, whether a proof replay would re-certify it.
func evidenceDTO(ctx context.Context, rec artifactRecord, now time.Time) (web.EvidenceDetail, error) {
	ev := rec.Evidence
	p := ev.Proposal
	a := evidenceArtifactDTO(rec)
	c := ev.Certificate
	cert := &web.Certificate{CertificateID: ev.CertificateID, ValidatorVersion: c.ValidatorVersion, Obligations: obligationNames(c.Satisfies),
		CreatedAt: rec.CertifiedAt.UTC()}
	d := web.EvidenceDetail{Artifact: a, Certificate: cert, Dependencies: []web.Dependency{}}
	repo, err := snapshot.Open(ctx, rec.Root, nil)
	changed := 0
	for _, dep := range c.Dependencies {
		state := "missing"
		if err == nil {
			state = dependencyState(ctx, repo, dep)
		}
		if state != "fresh" {
			changed++
		}
		d.Dependencies = append(d.Dependencies, web.Dependency{Kind: string(dep.Kind), Path: dep.Path, Digest: dep.Digest, State: state})
	}
	d.Freshness = web.Freshness{State: "fresh", CheckedAt: now.UTC(), Changed: changed}
	if changed > 0 {
		d.Freshness.State = "stale"
		if err == nil {
			if q, ok := relocated(p, c.Cited, repo); ok {
				// A read runs nothing: a focused test, proven only by a
				// run, is never called replayable here; a flow is when its
				// calls still hold as go/types sees them (the replay runs
				// its scenario again).
				v, verr := newValidators(repo, "", TestsConfig{}).validate(ctx, q)
				if verr != nil {
					return web.EvidenceDetail{}, &Error{Op: "api.evidence", Kind: kindIO, Err: verr}
				}
				if v.Certified() {
					d.Freshness.State = "replayable"
				}
			}
		}
	}
	return d, nil
}

// evidenceArtifactDTO projects an artifact's proposal: its status and,
// by kind, its location, flow steps or focused tests.
func evidenceArtifactDTO(rec artifactRecord) web.Artifact {
	ev := rec.Evidence
	p := ev.Proposal
	a := web.Artifact{ArtifactID: ev.ArtifactID, Kind: string(p.Kind), Status: "certified",
		Subject:   web.Subject{Kind: string(p.Subject.Kind), Name: safeText(p.Subject.Name, web.MaxTextBytes)},
		Locations: []web.Location{}, Steps: []web.FlowStep{}, Tests: []web.TestRef{}, Reasons: []string{}}
	if rec.Superseded {
		a.Status = "superseded"
	}
	switch p.Kind {
	case capImplementationLocation:
		a.Locations = append(a.Locations, web.Location{Path: p.Path, StartLine: p.StartLine, EndLine: p.EndLine, Symbol: symbolOf(p.Subject)})
	case capRuntimeFlow:
		for i, s := range p.Steps {
			a.Steps = append(a.Steps, web.FlowStep{Ordinal: i + 1, Location: web.Location{Path: s.Path, StartLine: s.StartLine, EndLine: s.EndLine},
				Description: workerText(s.Summary)})
		}
	case capFocusedTests:
		// The command is Needle's, from the certificate: a proposal's
		// command is worker text and never kept.
		commands := map[[2]string]string{}
		for _, t := range ev.Certificate.Tests {
			commands[[2]string{t.Path, t.Name}] = t.Command
		}
		for _, t := range p.Tests {
			a.Tests = append(a.Tests, web.TestRef{Package: testDir(t.Path), Name: t.Name, Path: t.Path,
				Command: safeText(commands[[2]string{t.Path, t.Name}], web.MaxTextBytes)})
		}
	}
	return a
}

// dependencyState is fresh, changed or missing for one dependency now.
func dependencyState(ctx context.Context, repo *snapshot.Repo, d dependency) string {
	digest, known, err := dependencyDigest(ctx, repo, d)
	switch {
	case !known, err != nil:
		return "missing"
	case digest != d.Digest:
		return "changed"
	}
	return "fresh"
}

// symbolOf names the symbol a location is of, for symbol subjects.
func symbolOf(s Subject) string {
	if s.Kind == subjectSymbol {
		return safeText(s.Name, web.MaxTextBytes)
	}
	return ""
}

// testDir is the package directory of a test file ("." at the root).
func testDir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return "./" + path[:i]
	}
	return "."
}

// obligationNames spells the facets a certificate satisfies:
// "implementation_location(selection=primary)".
func obligationNames(s satisfies) []string {
	var facets []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			facets = append(facets, name+"="+strings.Join(values, "|"))
		}
	}
	add("polarity", s.Polarity)
	add("selection", s.Selection)
	if s.Scenario != "" {
		facets = append(facets, "scenario="+s.Scenario)
	}
	add("completeness", s.Completeness)
	add("granularity", s.Granularity)
	name := string(s.Kind)
	if len(facets) > 0 {
		name += "(" + strings.Join(facets, ",") + ")"
	}
	return []string{name}
}
