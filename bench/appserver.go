package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/codextest"
	"github.com/rogpeppe/go-internal/txtar"
)

// replay serves frozen transcripts in place of the codex binary. The
// product runs its App Server command with "app-server" appended, so that
// argument is accepted and ignored.
func (h *harness) replay(args []string) int {
	fs := h.flags("appserver-replay")
	paths := fs.String("transcripts", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *paths == "" || fs.NArg() > 1 || (fs.NArg() == 1 && fs.Arg(0) != "app-server") {
		fmt.Fprintf(h.stderr, "needlebench appserver-replay: --transcripts PATH is required\n\n%s", usage)
		return 2
	}
	if err := codextest.ServeAppServerReplay(h.ctx, strings.Split(*paths, ","), h.stdin, h.stdout, h.stderr); err != nil {
		fmt.Fprintf(h.stderr, "needlebench appserver-replay: %v\n", err)
		return 1
	}
	return 0
}

// fakeModel serves a scripted Responses API on loopback until stdin closes
// or the process is interrupted, publishing its URL to a file (never a
// fixed port).
func (h *harness) fakeModel(args []string) int {
	fs := h.flags("fake-model")
	script := fs.String("script", "", "")
	addrFile := fs.String("addr-file", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *script == "" || *addrFile == "" || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench fake-model: --script and --addr-file are required\n\n%s", usage)
		return 2
	}
	data, err := os.ReadFile(*script)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench fake-model: %v\n", err)
		return 1
	}
	m, err := codextest.StartFakeModel(data)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench fake-model: %v\n", err)
		return 1
	}
	defer m.Close()
	if err := os.WriteFile(*addrFile, []byte(m.URL()+"\n"), 0o644); err != nil {
		fmt.Fprintf(h.stderr, "needlebench fake-model: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(h.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	go func() { _, _ = h.stdin.Read(make([]byte, 1)); close(done) }()
	select {
	case <-ctx.Done():
	case <-done:
	}
	return 0
}

// record drives the real codex binary through the product's evidence worker
// against a fake model that answers with the given proposal, and freezes the
// session into the output directory.
func (h *harness) record(args []string) int {
	fs := h.flags("record")
	codex := fs.String("codex", "", "")
	repo := fs.String("repository", "", "")
	needFile := fs.String("need", "", "")
	answer := fs.String("answer", "", "")
	profile := fs.String("profile", "", "")
	out := fs.String("out", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if fs.NArg() == 1 && *repo == "" && *needFile == "" && *answer == "" && *profile == "" {
		if *codex == "" {
			p, err := exec.LookPath("codex")
			if err != nil {
				fmt.Fprintf(h.stderr, "needlebench record: no codex binary on PATH; pass --codex BIN (make frozen-corpus uses the pinned one)\n")
				return 1
			}
			*codex = p
		}
		runs, err := Record(h.ctx, fs.Arg(0), *codex, *out, h.stderr)
		if err != nil {
			fmt.Fprintf(h.stderr, "needlebench record: %v\n", err)
			return 1
		}
		fmt.Fprintf(h.stdout, "recorded %d worker sessions of %s\n", runs, fs.Arg(0))
		return 0
	}
	if *codex == "" || *repo == "" || *needFile == "" || *answer == "" || *out == "" || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench record: want [--codex BIN] [--out DIR] CORPUS, or --codex, --repository, --need, --answer and --out\n\n%s", usage)
		return 2
	}
	res, err := recordWorker(h.ctx, *codex, *repo, *needFile, *answer, *profile, *out)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench record: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "recorded %s: %s (worker spawned %v)\n", res.NeedID, res.Resolution.Kind, res.WorkerSpawned)
	return 0
}

// recordWorker runs one need through a fresh engine whose evidence worker is
// the real codex binary, talking to a fake model scripted to read the cited
// file and then answer. With profileFile the engine runs under that role
// profile (its worker model and effort reach the worker).
func recordWorker(ctx context.Context, codex, repo, needFile, answerFile, profileFile, out string) (product.NeedResult, error) {
	var res product.NeedResult
	needData, err := os.ReadFile(needFile)
	if err != nil {
		return res, err
	}
	req, err := product.DecodeNeedRequest(needData)
	if err != nil {
		return res, err
	}
	answer, err := os.ReadFile(answerFile)
	if err != nil {
		return res, err
	}
	rec, err := startRecording(codex, repo, out, codextest.WorkerScript(answer))
	if err != nil {
		return res, err
	}
	defer rec.Close()
	cfg := rec.cfg
	if profileFile != "" {
		var stderr strings.Builder
		args := []string{"profile", "create", "--data-dir", cfg.DataDir, "recorded", profileFile}
		if code := product.Main(ctx, args, strings.NewReader(""), io.Discard, &stderr); code != 0 {
			return res, fmt.Errorf("role profile %s: %s", profileFile, strings.TrimSpace(stderr.String()))
		}
		cfg.RoleProfile = "recorded"
	}
	eng, err := product.Open(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer eng.Close()
	return eng.NeedContext(ctx, "record", req)
}

// recording is what each needlebench record-* command sets up around the
// sessions it records: a loopback fake model playing the script, a
// throwaway directory holding the repository (a txtar archive is extracted
// there), a CODEX_HOME that points the real codex at the fake model, and
// the engine configuration that records the worker sessions into out.
type recording struct {
	model *codextest.FakeModel
	tmp   string
	cfg   product.Config
}

func startRecording(codex, repo, out string, script []byte) (*recording, error) {
	m, err := codextest.StartFakeModel(script)
	if err != nil {
		return nil, err
	}
	rec := &recording{model: m}
	if rec.tmp, err = os.MkdirTemp("", "needlebench-record-"); err != nil {
		m.Close()
		return nil, err
	}
	if strings.HasSuffix(repo, ".txtar") {
		repo, err = extractTxtar(repo, filepath.Join(rec.tmp, "repo"))
	}
	home := filepath.Join(rec.tmp, "codex-home")
	if err == nil {
		err = os.MkdirAll(home, 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(home, "config.toml"), []byte(m.ConfigTOML()), 0o600)
	}
	if err != nil {
		rec.Close()
		return nil, err
	}
	rec.cfg = product.Config{
		DataDir: filepath.Join(rec.tmp, "data"), Repository: repo, Transport: "bench",
		Codex: &product.CodexConfig{Command: []string{codex}, Home: home, RecordDir: out},
	}
	return rec, nil
}

// Close stops the fake model and removes the throwaway directory.
func (r *recording) Close() {
	r.model.Close()
	_ = os.RemoveAll(r.tmp)
}

// extractTxtar writes the files of a txtar archive under dir.
func extractTxtar(file, dir string) (string, error) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		return "", err
	}
	for _, f := range ar.Files {
		name := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(name, f.Data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
