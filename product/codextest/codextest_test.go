package codextest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// corpusFrozen is the default corpus's frozen worker sessions, relative to
// this package: hundreds of transcripts, one per worker invocation.
const corpusFrozen = "../../frozen/default"

func mustCorpusFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := TranscriptFiles([]string{corpusFrozen})
	if err != nil {
		tb.Fatalf("the default corpus's transcripts must be present: %v", err)
	}
	if len(files) < 3 {
		tb.Fatalf("%d transcripts in %s", len(files), corpusFrozen)
	}
	return files
}

// homeOf is a worker's CODEX_HOME as the product names it
// (<invocation>-<owner>-<random>) for the session of file.
func homeOf(tb testing.TB, file string) string {
	tb.Helper()
	h, err := transcript.ReadHeader(file)
	if err != nil {
		tb.Fatal(err)
	}
	_, inv, _ := strings.Cut(h.Scenario, " ")
	hex, ok := strings.CutPrefix(inv, "b3:")
	if !ok || len(hex) < 16 {
		tb.Fatalf("%s: scenario %q names no invocation", file, h.Scenario)
	}
	return filepath.Join(tb.TempDir(), hex[:16]+"-1000-abcdef")
}

// TestSessionFiles chooses a worker's session by the headers alone: the
// one file whose scenario names the invocation in CODEX_HOME, though
// another transcript's body is broken; every file when CODEX_HOME names no
// invocation or none matches; and an error for a broken header.
func TestSessionFiles(t *testing.T) {
	files := mustCorpusFiles(t)[:3]
	dir := t.TempDir()
	var copies []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(c, data, 0o644); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, c)
	}
	// The third transcript keeps its header and loses its body.
	header, _, _ := strings.Cut(string(mustRead(t, copies[2])), "\n")
	if err := os.WriteFile(copies[2], []byte(header+"\nnot a message\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := sessionFiles(copies, homeOf(t, copies[0]))
	if err != nil || !slices.Equal(got, copies[:1]) {
		t.Fatalf("sessionFiles = %v, %v; want %v", got, err, copies[:1])
	}
	if _, err := transcript.ReadFile(got[0]); err != nil {
		t.Fatal(err)
	}
	for _, home := range []string{"", filepath.Join(dir, "not-an-invocation"), filepath.Join(dir, "0000000000000000-1000-abcdef")} {
		if got, err := sessionFiles(copies, home); err != nil || !slices.Equal(got, copies) {
			t.Errorf("CODEX_HOME %q: sessionFiles = %v, %v; want every file", home, got, err)
		}
	}

	if err := os.WriteFile(copies[1], []byte("{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var te *transcript.Error
	if _, err := sessionFiles(copies, homeOf(t, copies[0])); !errors.As(err, &te) || te.Line != 1 {
		t.Errorf("a broken header: err = %v, want a *transcript.Error at line 1", err)
	}
}

func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkReplayStart is what a replay server does before it serves a
// worker of the default corpus: /HeadersFirst chooses the session by the
// headers and parses only it (sessionFiles), /ParseAll parses every
// transcript and then chooses, as it did before.
func BenchmarkReplayStart(b *testing.B) {
	files := mustCorpusFiles(b)
	home := homeOf(b, files[len(files)/2])
	b.Run("HeadersFirst", func(b *testing.B) {
		for b.Loop() {
			chosen, err := sessionFiles(files, home)
			if err != nil || len(chosen) != 1 {
				b.Fatalf("chose %d: %v", len(chosen), err)
			}
			if _, err := transcript.ReadFile(chosen[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseAll", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				if _, err := transcript.ReadFile(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
