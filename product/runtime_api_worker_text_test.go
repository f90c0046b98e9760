package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/web"
)

// Worker text planted by the worker-text test: what a worker (or an
// operator's proposal) writes freely, each a distinct canary.
const (
	canaryReview  = "canary-review: the reviewer wrote this"
	canaryReason  = "canary-reason: the verifier wrote this"
	canaryReport  = "canary-report: the patch worker wrote this"
	canaryFailure = "canary-failure: the App Server relayed this"
)

// workerTextLifecycles makes two lifecycles on the fixture's data
// directory whose workers write canaries wherever a worker writes free
// text: one verified (a review finding, a verifier's reason and the patch
// worker's report) and one whose review run fails with a report quoting
// the worker. It returns their ids.
func (f *apiFixture) workerTextLifecycles(t *testing.T) []string {
	t.Helper()
	repo := MustFixtureRepo(t, "grepx", true)
	script := &fakeScript{Tokens: 1000, Tests: []lifecycle.TestOutcome{lifecycle.TestPassed},
		Patches: []map[string]string{{"search.go": splitCommented(t, repo, "// splitCRLF cuts data at CRLF (\\r\\n) or LF line ends.")}},
		Review:  `{"findings":[{"severity":"minor","criterion":0,"summary":"` + canaryReview + `"}]}`,
		Verdicts: []string{`{"verdict":"verified","criteria":[{"criterion":1,"status":"met","reason":"` + canaryReason +
			`"}],"repair_instructions":""}`}}
	failReview := false
	te := &testEngine{tb: t, repo: repo, data: f.data}
	te.reopen(func(c *Config) {
		a := script.adapters(repo)
		implement, review := a.Implement, a.Review
		a.Implement = func(ctx context.Context, req implementRequest) (implementResult, error) {
			res, err := implement(ctx, req)
			res.Report = `{"summary":"` + canaryReport + `","criteria":[],"risks":["` + canaryReport + `"]}`
			return res, err
		}
		a.Review = func(ctx context.Context, req reviewRequest) (reviewResult, error) {
			if failReview { // what the Codex adapter returns when the App Server ends a turn failed
				return reviewResult{Thread: "fake-review"}, errors.New("worker turn for review ended failed: " + canaryFailure)
			}
			return review(ctx, req)
		}
		c.Lifecycle = &a
	})
	plan := te.mustCertify(focusedSplit).ArtifactID
	var ids []string
	for _, fail := range []bool{false, true} {
		failReview = fail
		req := changeRequest{Task: "Say in the comment of splitCRLF which line ends it cuts at.",
			Criteria: []string{"The comment of splitCRLF names both CRLF and LF."},
			Scopes:   []pathScope{{Path: "search.go", Kind: scopeExact}}}
		d, err := te.StartLifecycle(context.Background(), LifecycleStart{Request: req, TestPlans: []string{plan}})
		if err != nil {
			t.Fatal(err)
		}
		if d, err = te.RunLifecycle(context.Background(), d.ID, nil); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]lifecycle.Status{false: lifecycle.StatusAwaitingApproval, true: lifecycle.StatusFailed}[fail]; d.Status != want {
			t.Fatalf("lifecycle %s is %s/%s, want %s", d.ID, d.Phase, d.Status, want)
		}
		ids = append(ids, d.ID)
	}
	return ids
}

// apiAnswerTypes names the DTO of every GET route's answer (an error answer
// is a web.Error); TestAPI_WorkerTextLabelled checks that it covers
// apiRoutes.
var apiAnswerTypes = map[string]reflect.Type{
	"GET /api/v1/status":                 reflect.TypeFor[web.Status](),
	"GET /api/v1/needs":                  reflect.TypeFor[web.Page[web.ResolutionSummary]](),
	"GET /api/v1/evidence/{artifact_id}": reflect.TypeFor[web.EvidenceDetail](),
	"GET /api/v1/accounting":             reflect.TypeFor[web.Accounting](),
	"GET /api/v1/lifecycles":             reflect.TypeFor[web.Page[web.LifecycleSummary]](),
	"GET /api/v1/lifecycles/{id}":        reflect.TypeFor[web.LifecycleDetail](),
	"GET /api/v1/lifecycles/{id}/events": reflect.TypeFor[web.Page[web.LifecycleEvent]](),
}

// apiEventTypes names the DTO of each event stream type's data.
var apiEventTypes = map[string]reflect.Type{
	web.EventResolution: reflect.TypeFor[web.ResolutionSummary](),
	web.EventLifecycle:  reflect.TypeFor[web.LifecycleChange](),
	web.EventAccounting: reflect.TypeFor[web.Accounting](),
}

// workerTextWalk walks a JSON answer along its DTO type, field by field.
type workerTextWalk struct {
	t       *testing.T
	planted []string       // worker text that must never travel unlabelled
	seen    map[string]int // planted text seen labelled, by text
	fields  int
}

// isLabel reports whether a DTO struct type is a label of worker text: it
// says the text is unverified and who wrote it. The walk knows the label
// by its shape, so that a field that is a plain string is found out.
func isLabel(t reflect.Type) bool {
	names := map[string]reflect.Kind{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names[name] = f.Type.Kind()
	}
	return names["text"] == reflect.String && names["unverified"] == reflect.Bool && names["source"] == reflect.String
}

// walk checks one JSON value v whose DTO type is t at path: every string
// holding planted worker text must lie in a label, and every label must
// say unverified, by a worker.
func (w *workerTextWalk) walk(v any, t reflect.Type, path string, labelled bool) {
	if v == nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(v, t.Elem(), path, labelled)
		return
	case reflect.Slice:
		for i, e := range v.([]any) {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), labelled)
		}
		return
	case reflect.Map:
		for k, e := range v.(map[string]any) {
			w.walk(e, t.Elem(), path+"."+k, labelled)
		}
		return
	case reflect.String:
		w.fields++
		s := v.(string)
		for _, p := range w.planted {
			switch {
			case !strings.Contains(s, p):
			case labelled:
				w.seen[p]++
			default:
				w.t.Errorf("%s (a plain %s) carries worker text without the unverified label: %q", path, t, s)
			}
		}
		return
	case reflect.Struct:
	default:
		w.fields++
		return
	}
	if t == reflect.TypeFor[time.Time]() {
		w.fields++
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		w.t.Errorf("%s: %T where the DTO %s has an object", path, v, t)
		return
	}
	if isLabel(t) {
		if obj["unverified"] != true || obj["source"] != "worker" {
			w.t.Errorf("%s: a label of worker text says unverified=%v source=%v", path, obj["unverified"], obj["source"])
		}
		labelled = true
	}
	known := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		known[name] = true
		if e, ok := obj[name]; ok {
			w.walk(e, f.Type, path+"."+name, labelled)
		}
	}
	for k := range obj {
		if !known[k] {
			w.t.Errorf("%s.%s: not a field of the DTO %s", path, k, t)
		}
	}
}

// TestAPI_WorkerTextLabelled fetches every GET route of a runtime whose
// data directory holds worker text everywhere a worker writes it (flow
// steps' descriptions, review findings, verifiers' reasons, patch reports,
// a failed run's report), and walks each answer along its DTO type by
// reflection: worker text may only travel inside a label that says it is
// unverified and a worker's, as the CLI and MCP say it.
func TestAPI_WorkerTextLabelled(t *testing.T) {
	f := mustAPIFixture(t)
	lifecycles := f.workerTextLifecycles(t)
	if err := f.rt.tail.publishNew(context.Background()); err != nil {
		t.Fatal(err)
	}
	var flow proposal
	if err := json.Unmarshal([]byte(flowCRLF), &flow); err != nil {
		t.Fatal(err)
	}
	w := &workerTextWalk{t: t, seen: map[string]int{},
		planted: []string{canaryReview, canaryReason, canaryReport, canaryFailure}}
	for _, s := range flow.Steps {
		w.planted = append(w.planted, s.Summary)
	}
	for _, r := range apiRoutes {
		if _, ok := apiAnswerTypes[r.pattern]; strings.HasPrefix(r.pattern, "GET ") && !ok {
			t.Errorf("apiAnswerTypes names no DTO for %s", r.pattern)
		}
	}
	routes := f.apiGetRoutes(t)
	for _, id := range lifecycles {
		routes = append(routes, "/api/v1/lifecycles/"+id, "/api/v1/lifecycles/"+id+"/events",
			"/api/v1/lifecycles/"+id+"/events?limit=1")
	}
	for _, route := range routes {
		status, body := f.do(t, http.MethodGet, route, nil, nil)
		typ := reflect.TypeFor[web.Error]()
		if status == http.StatusOK {
			typ = answerType(t, route)
		}
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET %s: %v", route, err)
		}
		w.walk(doc, typ, "GET "+route, false)
	}
	// The event stream's data, replayed from its start, until the failed
	// lifecycle's last event (each event carries its summary as it is now).
	epoch, _, _ := strings.Cut(f.rt.mustStatus(t).EventID, "-")
	req, _ := http.NewRequest(http.MethodGet, f.rt.URL()+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Last-Event-ID", epoch+"-0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	for failed := false; !failed; {
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		typ, ok := apiEventTypes[ev.Type]
		if !ok {
			t.Fatalf("event %s of an unknown type %q", ev.ID, ev.Type)
		}
		var doc any
		if err := json.Unmarshal(ev.Data, &doc); err != nil {
			t.Fatal(err)
		}
		w.walk(doc, typ, "event "+ev.Type, false)
		var c web.LifecycleChange
		failed = ev.Type == web.EventLifecycle && json.Unmarshal(ev.Data, &c) == nil &&
			c.Summary.LifecycleID == lifecycles[1] && c.Event.Seq == int64(c.Summary.Events)
	}
	// The answers showed worker text, labelled: the walk saw what it
	// guards. (The patch worker's report is not shown at all.)
	for _, p := range append([]string{canaryFailure, canaryReview, canaryReason}, w.planted[4:]...) {
		if w.seen[p] == 0 {
			t.Errorf("no answer showed the worker text %q: the test no longer reaches it", p)
		}
	}
	t.Logf("walked %d routes and the event stream: %d fields, worker text labelled %v", len(routes), w.fields, w.seen)
}

// answerType is the DTO of a 200 answer of route.
func answerType(t *testing.T, route string) reflect.Type {
	t.Helper()
	path, _, _ := strings.Cut(route, "?")
	parts := strings.Split(strings.TrimPrefix(path, "/api/v1/"), "/")
	pattern := "GET /api/v1/" + parts[0]
	switch {
	case len(parts) == 2 && parts[0] == "evidence":
		pattern += "/{artifact_id}"
	case len(parts) >= 2 && parts[0] == "lifecycles":
		pattern += "/{id}"
		if len(parts) == 3 {
			pattern += "/" + parts[2]
		}
	}
	typ, ok := apiAnswerTypes[pattern]
	if !ok {
		t.Fatalf("no DTO for %s (%s)", route, pattern)
	}
	return typ
}
