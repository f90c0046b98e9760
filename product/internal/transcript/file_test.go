package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// frozenDir is the directory of the frozen real sessions, relative to this
// package. CI has it, so its absence is a failure, never a skip.
const frozenDir = "../../../frozen/reference-0.171.0"

// MustFrozenFiles returns the paths of the frozen transcripts.
func MustFrozenFiles(tb testing.TB) []string {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(frozenDir, "*.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(names) == 0 {
		tb.Fatalf("no frozen transcripts in %s: the shared fixtures must be present", frozenDir)
	}
	return names
}

// MustReadFile reads a file the test cannot do without.
func MustReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

const testHeader = `{"kind":"header","format":"needle.codex-appserver-transcript/v1","codexVersion":"0.171.0","scenario":"t","placeholders":["CWD"],"match":{"ignoreParamKeys":["clientInfo.version"]}}`

func TestReadFile_Frozen(t *testing.T) {
	for _, name := range MustFrozenFiles(t) {
		tr, err := ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.CodexVersion != "0.171.0" || tr.Header.Scenario == "" {
			t.Errorf("%s: header %+v", name, tr.Header)
		}
		raw := bytes.Split(bytes.TrimSuffix(MustReadFile(t, name), []byte("\n")), []byte("\n"))
		if len(raw) != len(tr.Lines)+1 {
			t.Fatalf("%s: %d lines read, file has %d", name, len(tr.Lines), len(raw)-1)
		}
		for i, l := range tr.Lines {
			if !bytes.Contains(raw[i+1], l.Msg) {
				t.Errorf("%s line %d: msg bytes not kept verbatim", name, i+2)
			}
		}
	}
}

func TestRead(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		in := testHeader + "\n" +
			`{"dir":"c2s","msg":{"method":"initialize","id":0,"params":{}},"t_ms":12,"note":"x"}` + "\n" +
			`{"dir":"s2c","msg":{"id":0,"result":{}}}` + "\n"
		tr, err := Read(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tr.Lines); got != 2 {
			t.Fatalf("got %d lines, want 2", got)
		}
		if got := string(tr.Lines[0].Msg); got != `{"method":"initialize","id":0,"params":{}}` {
			t.Errorf("msg = %s", got)
		}
	})
	long := `{"dir":"c2s","msg":{"method":"x","params":"` + strings.Repeat("a", MaxLine) + `"}}`
	for _, tc := range []struct {
		name, in string
		line     int
	}{
		{"ErrEmpty", "", 1},
		{"ErrHeaderOnly", testHeader + "\n", 2},
		{"ErrNoFinalNewline", testHeader + "\n" + `{"dir":"c2s","msg":{"method":"initialized"}}`, 2},
		{"ErrTruncatedLine", testHeader + "\n" + `{"dir":"c2s","msg":{"meth`, 2},
		{"ErrWrongFormat", strings.Replace(testHeader, "/v1", "/v2", 1) + "\n", 1},
		{"ErrNotHeader", `{"dir":"c2s","msg":{"method":"initialized"}}` + "\n", 1},
		{"ErrPlaceholderName", strings.Replace(testHeader, `"CWD"`, `"cwd"`, 1) + "\n", 1},
		{"ErrBlankLine", testHeader + "\n\n", 2},
		{"ErrDir", testHeader + "\n" + `{"dir":"up","msg":{"method":"initialized"}}` + "\n", 2},
		{"ErrNoMsg", testHeader + "\n" + `{"dir":"c2s"}` + "\n", 2},
		{"ErrMsgNotObject", testHeader + "\n" + `{"dir":"c2s","msg":[1]}` + "\n", 2},
		{"ErrMsgShape", testHeader + "\n" + `{"dir":"c2s","msg":{"params":{}}}` + "\n", 2},
		{"ErrResultAndError", testHeader + "\n" + `{"dir":"s2c","msg":{"id":1,"result":{},"error":{}}}` + "\n", 2},
		{"ErrFloatID", testHeader + "\n" + `{"dir":"c2s","msg":{"id":1.5,"method":"x"}}` + "\n", 2},
		{"ErrLineTooLong", testHeader + "\n" + long + "\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", e.Line, tc.line, err)
			}
		})
	}
}

// TestReadHeader reads the header of every frozen transcript alone, as
// Read reads it, and refuses a file whose first line is not one.
func TestReadHeader(t *testing.T) {
	for _, name := range MustFrozenFiles(t) {
		h, err := ReadHeader(name)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tr.Header, *h); diff != "" {
			t.Errorf("%s: header (-Read +ReadHeader):\n%s", name, diff)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":      "",
		"no newline": testHeader,
		"not json":   "{\n",
		"a message":  `{"dir":"c2s","msg":{"method":"x","id":"a"}}` + "\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var e *Error
		if _, err := ReadHeader(path); !errors.As(err, &e) || e.Line != 1 {
			t.Errorf("%s: err = %v, want *Error at line 1", name, err)
		}
	}
	// The rest of the file is not read: a header over a broken body is a
	// header (ReadFile refuses the file).
	path := filepath.Join(dir, "broken-body.jsonl")
	if err := os.WriteFile(path, []byte(testHeader+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHeader(path); err != nil || h.Scenario != "t" {
		t.Errorf("ReadHeader over a broken body = %+v, %v", h, err)
	}
	if _, err := ReadFile(path); err == nil {
		t.Error("ReadFile accepted a broken body")
	}
}

func TestReadFile_ErrMissing(t *testing.T) {
	if _, err := ReadFile("testdata/does-not-exist.jsonl"); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{`{"method":"a","id":1}`, KindRequest},
		{`{"method":"a","id":"s","params":{}}`, KindRequest},
		{`{"method":"a"}`, KindNotification},
		{`{"method":"a","params":{},"emittedAtMs":1}`, KindNotification},
		{`{"id":1,"result":{}}`, KindResponse},
		{`{"error":{"code":-32600,"message":"m"},"id":3}`, KindResponse},
		{`{"id":1}`, ""},
		{`{"method":7}`, ""},
		{`{"method":"a","id":null}`, ""},
		{`[]`, ""},
		{`not json`, ""},
	} {
		if got := Kind(json.RawMessage(tc.msg)); got != tc.want {
			t.Errorf("Kind(%s) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestTranscript_Write(t *testing.T) {
	t.Run("RoundTripFrozen", func(t *testing.T) {
		for _, name := range MustFrozenFiles(t) {
			tr, err := ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := tr.Write(&buf); err != nil {
				t.Fatal(err)
			}
			again, err := Read(&buf)
			if err != nil {
				t.Fatalf("%s: rereading written transcript: %v", name, err)
			}
			if diff := diffTranscripts(tr, again); diff != "" {
				t.Errorf("%s: round trip: %s", name, diff)
			}
		}
	})
	t.Run("Exact", func(t *testing.T) {
		tr := &Transcript{
			Header: Header{Kind: "header", Format: Format, Scenario: "s"},
			Lines: []Line{
				{Dir: ClientToServer, Msg: json.RawMessage(`{"method": "a<b>", "id": 1}`)},
				{Dir: ServerToClient, Msg: json.RawMessage("{\"id\":1,\n\"result\":{}}")},
			},
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			t.Fatal(err)
		}
		want := `{"kind":"header","format":"needle.codex-appserver-transcript/v1","codexVersion":"","scenario":"s","placeholders":[],"match":{"ignoreParamKeys":[]}}` + "\n" +
			`{"dir":"c2s","msg":{"method": "a<b>", "id": 1}}` + "\n" +
			`{"dir":"s2c","msg":{"id":1,"result":{}}}` + "\n"
		if diff := cmp.Diff(want, buf.String()); diff != "" {
			t.Errorf("written (-want +got):\n%s", diff)
		}
	})
	t.Run("ErrBadLine", func(t *testing.T) {
		tr := &Transcript{
			Header: Header{Kind: "header", Format: Format},
			Lines:  []Line{{Dir: "c2s", Msg: json.RawMessage(`{"id":1}`)}},
		}
		var e *Error
		if err := tr.Write(&bytes.Buffer{}); !errors.As(err, &e) || e.Line != 2 {
			t.Fatalf("err = %v, want *Error at line 2", err)
		}
	})
	t.Run("ErrBadHeader", func(t *testing.T) {
		tr := &Transcript{Header: Header{Kind: "header", Format: "other"}}
		var e *Error
		if err := tr.Write(&bytes.Buffer{}); !errors.As(err, &e) || e.Line != 1 {
			t.Fatalf("err = %v, want *Error at line 1", err)
		}
	})
}

// FuzzRead checks that Read never panics, reports failures as *Error, and
// that whatever it accepts survives a Write/Read cycle unchanged; and that
// reading the header alone never accepts what Read rejects in the header,
// and gives Read's header for what Read accepts.
func FuzzRead(f *testing.F) {
	for _, name := range MustFrozenFiles(f) {
		data := MustReadFile(f, name)
		f.Add(data)
		// Also each message alone under its header: small seeds keep the
		// fuzzer's mutation and minimization fast (whole files are ~15 KB).
		lines := bytes.SplitAfter(data, []byte("\n"))
		for _, l := range lines[1:] {
			if len(l) > 0 {
				f.Add(append(bytes.Clone(lines[0]), l...))
			}
		}
	}
	f.Add([]byte(testHeader + "\n" + `{"dir":"c2s","msg":{"method":"x","id":"a"}}` + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		h, herr := readHeader(bytes.NewReader(data))
		var he *Error
		switch {
		case herr != nil && (!errors.As(herr, &he) || he.Line != 1):
			t.Fatalf("header error %v is not an *Error at line 1", herr)
		case herr != nil && err == nil:
			t.Fatalf("the header alone was refused (%v) but Read accepted the transcript", herr)
		case err == nil && !cmp.Equal(*h, tr.Header):
			t.Fatalf("header alone differs from Read's: %s", cmp.Diff(tr.Header, *h))
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error %v is not an *Error with a line", err)
			}
			if e.Line == 1 && herr == nil {
				t.Fatalf("Read refused line 1 (%v) but the header alone was accepted", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			t.Fatalf("Write of an accepted transcript: %v", err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read of a written transcript: %v\n%s", err, buf.Bytes())
		}
		if diff := diffTranscripts(tr, again); diff != "" {
			t.Fatalf("round trip: %s", diff)
		}
	})
}

func TestFrozenDir(t *testing.T) {
	// The fixtures are shared with the rest of the project; make sure the
	// relative path really names them and not some stale copy.
	if _, err := os.Stat(frozenDir + "/evidence.jsonl"); err != nil {
		t.Fatal(err)
	}
}

// diffTranscripts describes the first difference between a and b, or
// returns "". Lines are compared as bytes: go-cmp walks a []byte element by
// element through reflection, which made fuzzing crawl.
func diffTranscripts(a, b *Transcript) string {
	if diff := cmp.Diff(a.Header, b.Header, cmpopts.EquateEmpty()); diff != "" {
		return "header (-a +b):\n" + diff
	}
	if len(a.Lines) != len(b.Lines) {
		return fmt.Sprintf("%d lines, then %d", len(a.Lines), len(b.Lines))
	}
	for i := range a.Lines {
		if a.Lines[i].Dir != b.Lines[i].Dir || !bytes.Equal(a.Lines[i].Msg, b.Lines[i].Msg) {
			return fmt.Sprintf("line %d: %s %s, then %s %s", i+2, a.Lines[i].Dir, a.Lines[i].Msg, b.Lines[i].Dir, b.Lines[i].Msg)
		}
	}
	return ""
}
