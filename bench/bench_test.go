package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFakeModel runs `needlebench fake-model` as the harness would: it
// publishes its address to a file, serves the scripted SSE answer on
// loopback, and exits when its stdin closes.
func TestFakeModel(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	addr := filepath.Join(dir, "addr")
	if err := os.WriteFile(script, []byte(`{"responses":[{"message":{"text":"hello from the script","usage":{"input":10,"output":2}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"fake-model", "--script", script, "--addr-file", addr}, stdinR, io.Discard, &stderr)
	}()
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		if data, err := os.ReadFile(addr); err == nil && strings.HasSuffix(string(data), "\n") {
			url = strings.TrimSpace(string(data))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address published: %s", stderr.String())
		}
		runtime.Gosched()
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("address %q is not loopback", url)
	}
	resp, err := http.Post(url+"/responses", "application/json", strings.NewReader(`{"model":"mock-model","input":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "event: response.completed") || !strings.Contains(string(body), "hello from the script") {
		t.Errorf("SSE answer %d:\n%s", resp.StatusCode, body)
	}
	stdinW.Close()
	if c := <-code; c != 0 {
		t.Errorf("exit %d: %s", c, stderr.String())
	}
}

// TestAppServerReplay_Mismatch: a client that strays from the transcript gets
// an error reply, the replay prints expected vs actual and exits non-zero.
func TestAppServerReplay_Mismatch(t *testing.T) {
	file := filepath.Join("..", "frozen", "contract", "evidence.jsonl")
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"appserver-replay", "--transcripts", file, "app-server"}, stdinR, stdoutW, &stderr)
		stdoutW.Close()
	}()
	if _, err := io.WriteString(stdinW, `{"method":"initialize","id":0,"params":{"clientInfo":{"name":"impostor","title":null,"version":"9"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"error"`) || !strings.Contains(line, "replay: unexpected request") {
		t.Fatalf("reply %q, %v", line, err)
	}
	stdinW.Close()
	if c := <-code; c == 0 {
		t.Fatal("the replay exited 0 after a mismatch")
	}
	if !strings.Contains(stderr.String(), "impostor") {
		t.Errorf("stderr does not show the actual message:\n%s", stderr.String())
	}
}

// TestCommandTable_MatchesHelp: every command of the table is in the help,
// and every command the help lists is in the table (or is help itself).
func TestCommandTable_MatchesHelp(t *testing.T) {
	_, list, ok := strings.Cut(usage, "\nCommands:\n")
	if !ok {
		t.Fatal("the help has no Commands section")
	}
	list, _, _ = strings.Cut(list, "\nExit status:")
	var helped []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)`).FindAllStringSubmatch(list, -1) {
		if !slices.Contains(helped, m[1]) {
			helped = append(helped, m[1])
		}
	}
	var table []string
	for _, c := range commands {
		table = append(table, c.name)
	}
	for _, name := range helped {
		if name != "help" && !slices.Contains(table, name) {
			t.Errorf("the help lists %q, which the command table lacks", name)
		}
	}
	for _, name := range table {
		if !slices.Contains(helped, name) {
			t.Errorf("the command table has %q, which the help does not list", name)
		}
	}
	if len(table) < 5 {
		t.Fatalf("found %d commands in the table", len(table))
	}
}
