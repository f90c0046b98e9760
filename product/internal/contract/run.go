package contract

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// Greet is the one source file of a scenario's working directory.
const Greet = "package greet\n\nfunc Greet(name string) string {\n\treturn \"hello \" + name\n}\n"

// Workspace creates the working directory of a scenario under parent.
func Workspace(parent string, git bool) (string, error) {
	dir := filepath.Join(parent, "work")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "greet.go"), []byte(Greet), 0o644); err != nil {
		return "", err
	}
	if !git {
		return dir, nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-qm", "work"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return dir, nil
}

// Run starts the App Server command in dir, plays the scenario's drive and
// closes the server by closing its stdin (the EOF shutdown the protocol
// promises). It returns the recorded lines.
func Run(ctx context.Context, sc Scenario, command []string, dir, home string, env []string) ([]transcript.Line, error) {
	return RunWithStderr(ctx, sc, command, dir, home, env, nil)
}

// RunWithStderr is Run with the server's stderr captured.
func RunWithStderr(ctx context.Context, sc Scenario, command []string, dir, home string, env []string, stderr io.Writer) ([]transcript.Line, error) {
	rec := transcript.NewRecorder()
	var answers []string
	var mu sync.Mutex
	client, err := appserver.Start(ctx, appserver.ProcSpec{
		Command: command, Dir: dir, Env: env, CodexHome: home, Tee: rec.Record, Stderr: stderr,
		OnRequest: Approver(sc.Approve, &answers, &mu), ExperimentalAPI: sc.Experimental,
	}, appserver.ClientInfo{Name: "needle", Title: "Needle", Version: "0.0.1"})
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	derr := sc.Drive(ctx, &Env{Client: client, Dir: dir, Answers: &answers})
	cerr := client.Close(ctx)
	if derr != nil {
		return rec.Lines(), derr
	}
	if cerr != nil {
		return rec.Lines(), fmt.Errorf("shutdown on stdin EOF: %w", cerr)
	}
	// The server must exit by itself, with status 0, when its stdin closes.
	if err := client.ExitErr(); err != nil {
		return rec.Lines(), fmt.Errorf("exit after stdin EOF: %w", err)
	}
	return rec.Lines(), nil
}

// syncWriter serializes writes to a buffer shared with the reader.
type syncWriter struct {
	mu sync.Mutex
	b  interface{ Write([]byte) (int, error) }
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
