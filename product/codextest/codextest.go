// Package codextest stands in for the codex binary in tests and in the
// harness, the way net/http/httptest stands in for a server: a replay App
// Server that serves frozen transcripts on stdio, and a loopback fake model
// (a Responses API playing a script) that a real codex talks to while
// transcripts are recorded. The product never uses it; tests and needlebench
// point the product's App Server command at the replay server.
//
// A test binary becomes the replay server when TestMain calls
// ServeIfReplay first and the test configures ReplayCommand as the App
// Server command: the worker re-executes the test binary, so no other
// binary has to be built.
package codextest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/internal/replay"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// ServeAppServerReplay serves frozen transcripts on stdio in place of
// `codex app-server`: each path is a transcript file or a directory of
// *.jsonl transcripts. The transcript is chosen by what the client sends; a
// client that strays from it gets an error reply and the call fails.
func ServeAppServerReplay(ctx context.Context, paths []string, stdin io.Reader, stdout, stderr io.Writer) error {
	files, err := TranscriptFiles(paths)
	if err != nil {
		return err
	}
	home := os.Getenv("CODEX_HOME")
	if files, err = sessionFiles(files, home); err != nil {
		return err
	}
	var ts []*transcript.Transcript
	for _, f := range files {
		t, err := transcript.ReadFile(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		ts = append(ts, t)
	}
	env := map[string]string{}
	if home != "" {
		env["CODEX_HOME"] = home
	}
	return replay.Serve(ctx, replay.Config{Transcripts: ts, Env: env, ApplyFileChanges: true}, stdin, stdout, stderr)
}

// sessionFiles picks the files of the recorded worker session the product
// is starting: every worker's CODEX_HOME is named after its invocation id
// (the identity of everything its prompt depends on), and so is the
// session's scenario ("<role>-worker <invocation>"). The lines a real
// server sends before the first client message that tells sessions apart
// (warnings, timestamps) vary between recordings, so sessions are chosen
// by identity rather than by lockstep. Only the headers are read to
// choose: a corpus holds hundreds of transcripts, and a replay server is
// started for every worker. Without a match every transcript stays a
// candidate and the replay decides.
func sessionFiles(files []string, home string) ([]string, error) {
	base := filepath.Base(home)
	prefix, _, ok := strings.Cut(base, "-") // <invocation>-<owner>-<random> (procdir.Make)
	if home == "" || !ok || len(prefix) != 16 {
		return files, nil
	}
	var chosen []string
	for _, f := range files {
		h, err := transcript.ReadHeader(f)
		if err != nil {
			return nil, err
		}
		if _, inv, _ := strings.Cut(h.Scenario, " "); strings.HasPrefix(inv, "b3:"+prefix) {
			chosen = append(chosen, f)
		}
	}
	if len(chosen) == 0 {
		return files, nil
	}
	return chosen, nil
}

// FakeModel is a loopback Responses API server playing a scripted model.
type FakeModel struct{ s *fakemodel.Server }

// StartFakeModel starts a fake model from a JSON script (see
// product/internal/fakemodel.LoadScript for its shape) on 127.0.0.1:0.
func StartFakeModel(script []byte) (*FakeModel, error) {
	s, err := fakemodel.LoadScript(bytes.NewReader(script))
	if err != nil {
		return nil, err
	}
	srv, err := fakemodel.Start(s)
	if err != nil {
		return nil, err
	}
	return &FakeModel{srv}, nil
}

// URL is the model's base URL (http://127.0.0.1:PORT/v1).
func (m *FakeModel) URL() string { return m.s.URL() }

// ConfigTOML is the CODEX_HOME/config.toml that points codex at the model.
func (m *FakeModel) ConfigTOML() string { return fakemodel.ConfigTOML(m.s.URL()) }

// Close stops the model.
func (m *FakeModel) Close() error { return m.s.Close() }

// WorkerScript is the fake-model script of an evidence worker that first
// reads the file its answer cites, then answers with the proposal JSON.
func WorkerScript(answer []byte) []byte {
	var cited struct {
		Path  string `json:"path"`
		Steps []struct {
			Path string `json:"path"`
		} `json:"steps"`
		Tests []struct {
			Path string `json:"path"`
		} `json:"tests"`
	}
	_ = json.Unmarshal(answer, &cited) // a malformed answer is recorded as it is: the validators reject it
	path := cited.Path
	switch {
	case path == "" && len(cited.Steps) > 0:
		path = cited.Steps[0].Path
	case path == "" && len(cited.Tests) > 0:
		path = cited.Tests[0].Path
	}
	var responses []any
	if path != "" {
		args, _ := json.Marshal(map[string]any{"cmd": "cat -n " + path, "yield_time_ms": 1000})
		responses = append(responses, map[string]any{"function_call": map[string]any{
			"call_id": "call_read", "name": "exec_command", "arguments": string(args),
			"usage": map[string]any{"input": 1800, "cached": 0, "output": 40, "reasoning": 0}}})
	}
	responses = append(responses, map[string]any{"message": map[string]any{
		"text": string(answer), "usage": map[string]any{"input": 2600, "cached": 1600, "output": 120, "reasoning": 0}}})
	script, _ := json.Marshal(map[string]any{"responses": responses})
	return script
}

// TranscriptFiles expands directories to the *.jsonl files they hold.
func TranscriptFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no transcripts in %s", strings.Join(paths, ", "))
	}
	return files, nil
}

// replayArg is the first argument of a test binary started as the replay
// server. The product scrubs a worker's environment, so the request travels
// in the arguments.
const replayArg = "codextest-appserver-replay"

// ReplayCommand is the App Server command that runs the calling test binary
// as the replay server of the given transcript files or directories (the
// product appends "app-server"). The paths must be absolute: the server runs
// in the worker's checkout. TestMain must call ServeIfReplay.
func ReplayCommand(paths ...string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{exe, replayArg, strings.Join(paths, ",")}, nil
}

// ServeIfReplay returns at once unless the process was started by
// ReplayCommand; then it serves the transcripts on stdio and exits: 0 when
// the client ran the transcript to its end, 1 otherwise.
func ServeIfReplay() {
	if len(os.Args) < 3 || os.Args[1] != replayArg {
		return
	}
	if err := ServeAppServerReplay(context.Background(), strings.Split(os.Args[2], ","), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "codextest replay: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
