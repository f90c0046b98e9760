package product

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTestsConfig: the sandbox Needle runs tests in is the tests.codex
// setting, else the worker command's codex, else codex on PATH, else none;
// tests.deadline bounds each run, tests.cache holds them.
func TestTestsConfig(t *testing.T) {
	ctx := context.Background()
	bin := t.TempDir()
	onPath := filepath.Join(bin, "codex")
	MustWriteFile(t, onPath, "#!/bin/sh\n")
	if err := os.Chmod(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	data := t.TempDir()
	if cfg, err := testsConfig(ctx, data, nil); err != nil || cfg.Codex != onPath || cfg.Deadline != 0 {
		t.Errorf("from PATH: %+v, %v; want %s", cfg, err, onPath)
	}
	worker := &CodexConfig{Command: []string{"/opt/codex/bin/codex"}}
	if cfg, _ := testsConfig(ctx, data, worker); cfg.Codex != "/opt/codex/bin/codex" {
		t.Errorf("from the worker command: %+v", cfg)
	}
	if cfg, _ := testsConfig(ctx, data, &CodexConfig{Command: []string{"/opt/replay/needlebench"}}); cfg.Codex != onPath {
		t.Errorf("a worker command that is not codex: %+v", cfg)
	}
	st := MustOpenStore(t, data)
	for k, v := range map[string]string{"tests.codex": onPath + "-pinned", "tests.deadline": "45s", "tests.cache": "/var/cache/needle-tests"} {
		if err := st.SetSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if cfg, err := testsConfig(ctx, data, worker); err != nil || cfg.Codex != onPath+"-pinned" || cfg.Deadline != 45*time.Second || cfg.CacheDir != "/var/cache/needle-tests" {
		t.Errorf("from the settings: %+v, %v", cfg, err)
	}
	t.Setenv("PATH", t.TempDir())
	if cfg, _ := testsConfig(ctx, t.TempDir(), nil); cfg.Codex != "" {
		t.Errorf("no codex anywhere: %+v", cfg)
	}
	if err := checkSetting("tests.deadline", "-1s", true); KindOf(err) != KindInvalidInput {
		t.Errorf("a negative deadline: %v", err)
	}
	if err := checkSetting("tests.codex", "codex", true); KindOf(err) != KindInvalidInput {
		t.Errorf("a relative sandbox path: %v", err)
	}
}

// TestTestsConfig_ColdCacheNotice: a command's tests configuration tells
// its stderr, before the first test run into an empty cache, that the
// standard library compiles there once. (The context is cancelled: the
// runner's self-test stops before it builds anything.)
func TestTestsConfig_ColdCacheNotice(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test runs it): %v", err)
	}
	var stderr strings.Builder
	cache := t.TempDir()
	c := &cli{ctx: context.Background(), stderr: &stderr}
	cfg, err := c.testsSettings(map[string]string{"tests.codex": "/bin/true", "tests.cache": cache}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newTestRunner(cfg, goToolchain{Go: goBin})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r.Check(ctx) == nil {
		t.Fatal("a self-test under a cancelled context passed")
	}
	want := "needle: compiling the Go standard library into the test cache " + filepath.Join(cache, "go-build") + ", once; this takes about a minute\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
