//go:build contract

package product

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestContract_Lifecycle plays the lifecycle scenarios against the real
// codex (NEEDLE_CODEX_BIN) and a fake model: the evidence worker, the
// patch worker's apply_patch in its checkout, the read-only reviewer and
// verifier, and go test in the codex sandbox — from explore to applied, a
// failing test repaired once, and a verifier that cannot tell.
func TestContract_Lifecycle(t *testing.T) {
	for _, name := range []string{"verified", "repair", "inconclusive"} {
		t.Run(name, func(t *testing.T) {
			sc := mustLifecycleScenario(t, name)
			repo := MustFixtureRepo(t, "grepx", true)
			te := contractChange(t, repo, "", sc.Script)
			te.reopen(func(c *Config) { c.Codex = te.cfg.Codex }, realTests(t))
			d := playLifecycle(t, te, sc)
			outputs := testOutputs(t, te, d.ID)
			if name == "repair" && (d.Round != 2 || len(outputs) != 2 || !strings.Contains(outputs[0], "--- FAIL: TestSplitCRLF")) {
				t.Errorf("repair: round %d, outputs %q", d.Round, outputs)
			}
			got := string(MustReadFile(t, filepath.Join(repo, "search.go")))
			if applied := strings.Contains(got, splitComment); applied != (name != "inconclusive") {
				t.Errorf("%s: search.go applied %v", name, applied)
			}
			for _, dir := range []string{"checkouts", "codex-homes"} {
				if hasEntries(filepath.Join(te.data, dir)) {
					t.Errorf("%s left behind", dir)
				}
			}
		})
	}
}
