// The command-line harness the testscripts tests drive needle with as a
// separate process: fixture trees and git repositories, needle's evidence
// and need commands, and read-only looks into its SQLite store. The
// hardening tests of issue 12 (build tag "harden") share it.
package testscripts

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/needle-dev/needle/product/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// needlePath is the needle command on PATH (testscript's copy of this test
// binary, which runs product.Main).
func needlePath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("needle")
	if err != nil {
		t.Fatalf("needle is not on PATH: %v (testscript.Main puts it there)", err)
	}
	return p
}

// writeTree writes files (slash paths → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitRepo makes dir a git repository with everything in it committed.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-qm", "fixture")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// runResult is one finished command.
type runResult struct {
	code           int
	stdout, stderr string
}

// run runs needle with args and stdin, waiting for it to exit.
func run(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(needlePath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("needle %v: %v", args, err)
	}
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// propose runs `needle evidence propose` and decodes its result; a command
// that prints no result yields status "".
func propose(t *testing.T, repo, data, proposal string) (proposeOut, runResult) {
	t.Helper()
	r := run(t, proposal, "evidence", "propose", "--repository", repo, "--data-dir", data, "-")
	var p proposeOut
	if strings.TrimSpace(r.stdout) != "" {
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatalf("propose printed %q: %v", r.stdout, err)
		}
	}
	return p, r
}

type proposeOut struct {
	Status     string   `json:"status"`
	ArtifactID string   `json:"artifact_id"`
	Reasons    []string `json:"reasons"`
}

// needResult is the part of a need_context / need resolve result the tests read.
type needResult struct {
	Status string `json:"status"`
	Step   struct {
		Ordinal  int    `json:"ordinal"`
		Relation string `json:"relation"`
	} `json:"step"`
	Resolution struct {
		Kind          string   `json:"kind"`
		ArtifactIDs   []string `json:"artifact_ids"`
		CertificateID string   `json:"certificate_id"`
	} `json:"resolution"`
	WorkerSpawned bool   `json:"worker_spawned"`
	Context       string `json:"context"`
}

// resolve runs `needle need resolve` (cache-only unless extra says
// otherwise) and decodes its result.
func resolve(t *testing.T, repo, data, need string, extra ...string) needResult {
	t.Helper()
	args := append([]string{"need", "resolve", "--repository", repo, "--data-dir", data}, extra...)
	if len(extra) == 0 {
		args = append(args, "--cache-only")
	}
	r := run(t, need, append(args, "-")...)
	if r.code != 0 {
		t.Fatalf("need resolve exited %d: %s", r.code, r.stderr)
	}
	var res needResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("need resolve printed %q: %v", r.stdout, err)
	}
	return res
}

// hit reports whether a result served certified context.
func (r needResult) hit() bool { return r.Status == "hit" }

// storeText returns every text value of every table of the SQLite store in
// data, to check that something never reached it whatever the schema.
func storeText(t *testing.T, data string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, v := range testenv.Values(t, db) {
		fmt.Fprintf(&b, "%s\x00", v)
	}
	return b.String()
}

// queryInt runs a counting query on the store in data.
func queryInt(t *testing.T, data, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
