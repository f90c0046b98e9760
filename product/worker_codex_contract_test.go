//go:build contract

package product

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// TestContract_WorkerDeadline runs the evidence worker against the real
// codex (NEEDLE_CODEX_BIN) with a model that never answers: past the turn
// deadline the turn is interrupted (or the process group killed), the need
// falls back to a bypass, and no checkout or CODEX_HOME is left behind.
func TestContract_WorkerDeadline(t *testing.T) {
	bin := testenv.Codex(t)
	held := fakemodel.Message("resp_1", "msg_1", "never sent", fakemodel.Usage{})
	held.Hold = true
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{held}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	home := t.TempDir()
	MustWriteFile(t, filepath.Join(home, "config.toml"), fakemodel.ConfigTOML(model.URL()))
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true), func(c *Config) {
		c.Codex = &CodexConfig{Command: []string{bin}, Home: home, Deadline: 3 * time.Second}
	})
	start := time.Now()
	r := te.need(needLocateNewSearcher)
	kindOf(t, r, resolutionBypass)
	if !r.WorkerSpawned || !strings.Contains(r.Context, "worker failed") || !strings.Contains(r.Context, "deadline") {
		t.Errorf("result %s\n%s", toJSON(r), r.Context)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the deadline did not bound the worker: %v", took)
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		entries, _ := os.ReadDir(filepath.Join(te.data, dir))
		for _, e := range entries {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
	var status, msg string
	if err := te.store.db.QueryRow(`SELECT status, error FROM worker_runs`).Scan(&status, &msg); err != nil || status != "failed" {
		t.Errorf("worker run %q %q (%v)", status, msg, err)
	}
}
