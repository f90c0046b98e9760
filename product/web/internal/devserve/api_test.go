package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"regexp"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/httpguard"
	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/internal/runlock"
)

// forbidden are JSON keys no DTO may carry: raw records, host paths,
// transcripts, credentials, raw model output.
var forbidden = regexp.MustCompile(`(?i)^(token|secret|password|credential.*|auth.*|cookie|transcript.*|raw.*|prompt|output|stdout|stderr|root|repository|data_dir|home|cwd|codex_home|body|excerpt|message_text)$`)

// absPath matches a host-local path inside any string value.
var absPath = regexp.MustCompile(`(^|[\s"'=:(])(/[A-Za-z0-9._-]+){2,}|^[A-Za-z]:\\|file://`)

// walk checks every key and string value of a decoded JSON document.
func walk(t *testing.T, route string, v any, path string, secrets []string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if forbidden.MatchString(k) {
				t.Errorf("%s: forbidden field %s.%s", route, path, k)
			}
			walk(t, route, e, path+"."+k, secrets)
		}
	case []any:
		for _, e := range x {
			walk(t, route, e, path+"[]", secrets)
		}
	case string:
		if absPath.MatchString(x) && !strings.HasPrefix(x, "b3:") {
			t.Errorf("%s: %s holds a host path: %q", route, path, x)
		}
		for _, s := range secrets {
			if strings.Contains(x, s) {
				t.Errorf("%s: %s holds a secret or the data directory", route, path)
			}
		}
	}
}

// TestRoutes_Walk fetches every GET route of the contract and walks each
// response for forbidden fields, absolute paths, the token and the data
// directory; the IPC socket answers the same bodies.
func TestRoutes_Walk(t *testing.T) {
	s := startSeeded(t)
	dataDir := s.lock.Holder().Endpoints[1][len("unix:"):]
	secrets := []string{s.token, strings.TrimSuffix(dataDir, "/needle.sock")}
	routes := []string{"/api/v1/status", "/api/v1/needs?limit=100", "/api/v1/needs?limit=5&cursor=5", "/api/v1/accounting", "/api/v1/lifecycles"}
	s.api.mu.Lock()
	for id := range s.api.evidence {
		routes = append(routes, "/api/v1/evidence/"+id)
	}
	for id := range s.api.lifecycles {
		routes = append(routes, "/api/v1/lifecycles/"+id, "/api/v1/lifecycles/"+id+"/events")
	}
	s.api.mu.Unlock()
	client := ipc.Client(dataDir)
	for _, r := range routes {
		status, body := s.get(t, r)
		if status != 200 {
			t.Fatalf("GET %s: %d %s", r, status, body)
		}
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET %s: %v", r, err)
		}
		walk(t, r, doc, "$", secrets)
		resp, err := client.Get(ipc.BaseURL + r)
		if err != nil {
			t.Fatal(err)
		}
		ipcBody, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(r, "evidence") { // freshness is checked per request
			continue
		}
		if string(ipcBody) != string(body) {
			t.Errorf("GET %s over IPC differs from HTTP:\n%s\n%s", r, ipcBody, body)
		}
	}
	t.Logf("walked %d route responses", len(routes))
}

// TestSecurity sends the security list's requests to the whole harness;
// each must be refused and change nothing.
func TestSecurity(t *testing.T) {
	s := startSeeded(t)
	const id = "chg_0123456789abcdef01234567"
	approve := "/api/v1/lifecycles/" + id + "/approvals"
	s.api.mu.Lock()
	body, _ := json.Marshal(map[string]any{"digests": s.api.lifecycles[id].current()})
	s.api.mu.Unlock()
	bearer := "Bearer " + s.token
	cases := map[string]struct {
		hdr  map[string]string
		want int
	}{
		"NoToken":            {map[string]string{"Content-Type": "application/json"}, 401},
		"WrongToken":         {map[string]string{"Authorization": "Bearer " + httpguard.NewSecret(), "Content-Type": "application/json"}, 401},
		"ForeignOrigin":      {map[string]string{"Authorization": bearer, "Origin": "http://evil.example", "Content-Type": "application/json"}, 403},
		"BadHost":            {map[string]string{"Authorization": bearer, "Host": "rebound.example:80", "Content-Type": "application/json"}, 421},
		"CrossSiteFormPost":  {map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, 401},
		"FormPostWithBearer": {map[string]string{"Authorization": bearer, "Content-Type": "text/plain"}, 415},
	}
	for name, c := range cases {
		if status, out := s.post(t, approve, string(body), c.hdr); status != c.want {
			t.Errorf("%s: %d %s, want %d", name, status, out, c.want)
		}
	}
	s.api.mu.Lock()
	n := len(s.api.approvals)
	s.api.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d approvals recorded by refused requests", n)
	}
	if status, out := s.post(t, approve, string(body), map[string]string{"Authorization": bearer, "Content-Type": "application/json"}); status != 201 {
		t.Fatalf("the genuine approval: %d %s", status, out)
	}
	_, err := start(context.Background(), options{dataDir: shortDir(t), addr: "0.0.0.0:0", log: log.New(io.Discard, "", 0)})
	var ae *httpguard.AddrError
	if !errors.As(err, &ae) {
		t.Errorf("non-loopback address: %v, want an *AddrError", err)
	}
	t.Logf("refused %d of %d hostile requests, and the non-loopback address", len(cases), len(cases))
}

// TestStart_Lock: a second runtime on one data dir refuses, naming the
// first; after a clean shutdown the data dir is free again.
func TestStart_Lock(t *testing.T) {
	dir := shortDir(t)
	o := options{dataDir: dir, addr: "127.0.0.1:0", log: log.New(io.Discard, "", 0)}
	first, err := start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = start(context.Background(), o)
	if !errors.Is(err, runlock.ErrHeld) || !strings.Contains(err.Error(), first.url) {
		t.Fatalf("second start: %v, want ErrHeld naming %s", err, first.url)
	}
	if err := first.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := start(context.Background(), o)
	if err != nil {
		t.Fatalf("start after shutdown: %v", err)
	}
	again.shutdown(context.Background())
}
