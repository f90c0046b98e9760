//go:build contract

package contract

import (
	"context"
	"github.com/needle-dev/needle/product/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// The contract tier: every scenario against the real pinned codex binary
// (NEEDLE_CODEX_BIN, set by make test-contract) and a loopback fake model.
// A missing binary fails the tier; it never skips.

const codexVersion = "codex-cli 0.171.0"

func codexBin(t *testing.T) string {
	t.Helper()
	bin := testenv.Codex(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != codexVersion {
		t.Fatalf("%s --version = %q, %v; want %s", bin, out, err, codexVersion)
	}
	return bin
}

func TestContract(t *testing.T) {
	bin := codexBin(t)
	for _, sc := range All() {
		t.Run(sc.Name, func(t *testing.T) {
			start := time.Now()
			lines := runReal(t, bin, sc)
			t.Logf("%s: %d lines in %v", sc.Name, len(lines), time.Since(start).Round(time.Millisecond))
		})
	}
}

func runReal(t *testing.T, bin string, sc Scenario) []transcript.Line {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	model, err := fakemodel.Start(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fakemodel.ConfigTOML(model.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := Workspace(t.TempDir(), sc.Git)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(OutsideFile)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C.UTF-8"}
	lines, err := Run(ctx, sc, []string{bin, "app-server"}, dir, home, env)
	if err != nil {
		for _, l := range lines {
			if s := string(l.Msg); strings.Contains(s, "commandExecution") || strings.Contains(s, `"error"`) || strings.Contains(s, "function_call") {
				t.Logf("%s %.400s", l.Dir, s)
			}
		}
		t.Fatalf("%s: %v", sc.Name, err)
	}
	if sc.CheckModel != nil {
		if err := sc.CheckModel(model.Requests()); err != nil {
			t.Errorf("%s: model requests: %v", sc.Name, err)
		}
	}
	if sc.CheckFS != nil {
		if err := sc.CheckFS(dir); err != nil {
			t.Errorf("%s: file system: %v", sc.Name, err)
		}
	}
	if os.Getenv("NEEDLE_UPDATE") == "1" {
		freeze(t, sc.Name, lines, dir, home)
	}
	return lines
}

// freeze writes the session to frozen/contract/NAME.jsonl with the
// environment-bound paths as placeholders.
func freeze(t *testing.T, name string, lines []transcript.Line, dir, home string) {
	tr, err := transcript.Freeze(transcript.Header{Kind: "header", Format: transcript.Format, CodexVersion: "0.171.0", Scenario: name,
		Match: transcript.Match{IgnoreParamKeys: []string{"clientInfo.version"}}}, lines, map[string]string{"CWD": dir, "CODEX_HOME": home})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(frozenDir, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tr.Write(f); err != nil {
		t.Fatal(err)
	}
}
