package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func id(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// session writes reqs (each a JSON line, a put followed by its body line)
// to serve and returns its responses after the announcement.
func session(t *testing.T, c cache, lines ...string) []response {
	t.Helper()
	var out bytes.Buffer
	if err := serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, c); err != nil {
		t.Fatalf("serve: %v", err)
	}
	var res []response
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Text(), err)
		}
		res = append(res, r)
	}
	if len(res) == 0 || len(res[0].KnownCommands) != 3 {
		t.Fatalf("no announcement: %+v", res)
	}
	return res[1:]
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestPutThenGet: what a put stores in the run's own directory a later
// get (of this process or the next, reading the files) finds, with its
// output id, size and body; the shared directory is never written.
func TestPutThenGet(t *testing.T) {
	own, shared := t.TempDir(), t.TempDir()
	c := cache{roots: []string{own, shared}}
	body := []byte("compiled")
	put := mustJSON(request{ID: 1, Command: "put", ActionID: id("a"), OutputID: id("o"), BodySize: int64(len(body))})
	res := session(t, c, put, mustJSON(base64.StdEncoding.EncodeToString(body)), mustJSON(request{ID: 2, Command: "get", ActionID: id("a")}),
		mustJSON(request{ID: 3, Command: "get", ActionID: id("b")}), mustJSON(request{ID: 4, Command: "close"}))
	if len(res) != 4 || res[0].Err != "" || res[1].Miss || !res[2].Miss || res[3].ID != 4 {
		t.Fatalf("responses: %+v", res)
	}
	if got, err := os.ReadFile(res[1].DiskPath); err != nil || !bytes.Equal(got, body) || res[1].Size != int64(len(body)) || !bytes.Equal(res[1].OutputID, id("o")) {
		t.Errorf("get after put: %+v, body %q (%v)", res[1], got, err)
	}
	if !strings.HasPrefix(res[1].DiskPath, own+string(filepath.Separator)) {
		t.Errorf("the put's output %s is not in the run's own directory", res[1].DiskPath)
	}
	if entries, _ := os.ReadDir(shared); len(entries) != 0 {
		t.Errorf("the shared directory was written: %v", entries)
	}
}

// TestGetShared: an entry the go command wrote into the shared cache (its
// format, written here as cmd/go/internal/cache writes it) is served
// from there; an entry that is not exactly that format, or whose output
// is missing or of another size, is a miss.
func TestGetShared(t *testing.T) {
	own, shared := t.TempDir(), t.TempDir()
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(action, output string, size int) []byte {
		return fmt.Appendf(nil, "v1 %x %x %20d %20d\n", id(action), id(output), size, 1700000000000000000)
	}
	write(path(shared, id("o"), "d"), []byte("12345"))
	write(path(shared, id("good"), "a"), entry("good", "o", 5))
	write(path(shared, id("size"), "a"), entry("size", "o", 6))
	write(path(shared, id("other"), "a"), entry("not other", "o", 5))
	write(path(shared, id("short"), "a"), entry("short", "o", 5)[:100])
	write(path(shared, id("long"), "a"), append(entry("long", "o", 5), ' '))
	write(path(shared, id("nooutput"), "a"), entry("nooutput", "missing", 5))
	c := cache{roots: []string{own, shared}}
	var lines []string
	names := []string{"good", "size", "other", "short", "long", "nooutput"}
	for i, n := range names {
		lines = append(lines, mustJSON(request{ID: int64(i + 1), Command: "get", ActionID: id(n)}))
	}
	res := session(t, c, lines...)
	for i, n := range names {
		if hit := !res[i].Miss; hit != (n == "good") {
			t.Errorf("get %s: %+v", n, res[i])
		}
	}
	if res[0].DiskPath != path(shared, id("o"), "d") || res[0].Size != 5 || res[0].Time == nil || res[0].Time.UnixNano() != 1700000000000000000 {
		t.Errorf("the shared hit: %+v", res[0])
	}
}

// FuzzServe: any input from the go command's side (in the sandbox, a test
// may speak to needle-cacheprog itself) gets answers or an error, never
// a panic, and writes nothing outside the run's own directory.
func FuzzServe(f *testing.F) {
	body := base64.StdEncoding.EncodeToString([]byte("x"))
	f.Add(mustJSON(request{ID: 1, Command: "put", ActionID: id("a"), OutputID: id("o"), BodySize: 1}) + "\n" + mustJSON(body) + "\n")
	f.Add(mustJSON(request{ID: 1, Command: "get", ActionID: id("a")}) + "\n")
	f.Add(`{"ID":1,"Command":"put","ActionID":"AA==","BodySize":-1}` + "\n")
	f.Add(`{"ID":1,"Command":"bogus"}` + "\n" + `{"ID":2,"Command":"close"}`)
	f.Fuzz(func(t *testing.T, in string) {
		own, shared := t.TempDir(), t.TempDir()
		_ = serve(strings.NewReader(in), &bytes.Buffer{}, cache{roots: []string{own, shared}})
		if entries, _ := os.ReadDir(shared); len(entries) != 0 {
			t.Fatalf("the shared directory was written: %v", entries)
		}
		_ = filepath.WalkDir(own, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type()&fs.ModeSymlink != 0 {
				t.Errorf("a symlink in the run's directory: %s", p)
			}
			return nil
		})
	})
}
