package testscripts

// Issue 12's regression tests of evidence and resolution, against the real
// needle command (see process_test.go): what a checkout is served, and when
// it is served nothing.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 12 item 4: evidence identity does not depend on where the
// repository lives, and freshness is checked against the asking checkout.
// Two clones share one data directory (the README suggests ~/.needle).
func TestHarden_SecondCheckoutReusesEvidence(t *testing.T) {
	dir := t.TempDir()
	a, b, data := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "data")
	writeTree(t, a, map[string]string{"store.go": storeGo})
	gitRepo(t, a)
	git(t, dir, "clone", "-q", a, b)

	if out, r := propose(t, a, data, openLocation); out.Status != "certified" {
		t.Fatalf("propose in a: %+v %s", out, r.stderr)
	}
	if res := resolve(t, b, data, needOpen); !res.hit() {
		t.Errorf("clone b, same source, evidence certified in a: %s %s; want a hit", res.Status, res.Resolution.Kind)
	}
	// Proposing the same evidence in b must make it usable there too.
	if out, r := propose(t, b, data, openLocation); out.Status != "certified" {
		t.Fatalf("propose in b: %+v %s", out, r.stderr)
	}
	if res := resolve(t, b, data, needOpen); !res.hit() {
		t.Errorf("clone b after certifying there too: %s %s; want a hit", res.Status, res.Resolution.Kind)
	}
	// Changing Open in b makes b's answer unusable, never a's.
	edited := strings.Replace(storeGo, "return s, nil", "return s, s.check()", 1)
	if err := os.WriteFile(filepath.Join(b, "store.go"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := resolve(t, b, data, needOpen); res.hit() {
		t.Errorf("clone b after Open changed there: served %s\n%s", res.Resolution.Kind, res.Context)
	}
	if res := resolve(t, a, data, needOpen); !res.hit() {
		t.Errorf("clone a, unchanged, after b changed: %s %s; want a hit", res.Status, res.Resolution.Kind)
	}
}

// Issue 12 item 13: a need whose world is not the current one is answered
// for that world or is a typed bypass that says why — never with evidence
// certified against the current source.
func TestHarden_WorldIsHonoured(t *testing.T) {
	repo, data := storeRepo(t)
	if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
		t.Fatalf("propose: %+v %s", out, r.stderr)
	}
	if res := resolve(t, repo, data, needOpen); !res.hit() {
		t.Fatalf("the current world: %s; want a hit", res.Status)
	}
	for _, world := range []string{
		`{"source":"b3:1111111111111111111111111111111111111111111111111111111111111111"}`,
		`{"platform":"plan9-mips"}`,
		`{"features":["cgo","netgo"]}`,
	} {
		res := resolve(t, repo, data, `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"},"world":`+world+`}`)
		if res.hit() || res.Status != "bypass" || !strings.Contains(res.Context, "world") {
			t.Errorf("world %s: %s %s\n%s\nwant a bypass that names the world", world, res.Status, res.Resolution.Kind, res.Context)
		}
	}
}

// Issue 12 item 20 (ledger, what spends a worker and what the text says):
// obligations no proposal can ever certify (negative polarity, a behavior
// subject) never spend a worker, and a partial hit's text names no empty
// certificate.
func TestHarden_LedgerSpendsNoWorkerOnTheUncertifiable(t *testing.T) {
	repo, data := storeRepo(t)
	log := filepath.Join(t.TempDir(), "worker.log")
	codex := workerScript(t, log, "exit 1")
	for _, need := range []string{
		`{"route":"locate.implementation","subject":{"kind":"behavior","name":"retries after a timeout"}}`,
		`{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"},"required":[{"kind":"implementation_location","polarity":"negative"}]}`,
	} {
		res := resolve(t, repo, data, need, "--codex", codex)
		if res.WorkerSpawned {
			t.Errorf("%s spent a worker: %s\n%s", need, res.Status, res.Context)
		}
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("the App Server command ran for obligations that cannot be certified")
	}

	if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
		t.Fatalf("propose: %+v %s", out, r.stderr)
	}
	res := resolve(t, repo, data, `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Open"}}`)
	if res.Status != "partial" {
		t.Fatalf("trace.state-flow with only a location certified: %s; the fixture expects partial", res.Status)
	}
	if regexp.MustCompile(`certificate\s*,`).MatchString(res.Context) {
		t.Errorf("the partial hit's text cites an empty certificate:\n%s", res.Context)
	}
}
