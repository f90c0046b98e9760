package testrun

import (
	"bytes"
	"strings"
	"testing"
)

const sampleProfile = `mode: count
example.com/reach/reach.go:8.37,11.2 2 1
example.com/reach/reach.go:13.34,13.48 1 3
example.com/reach/reach.go:21.22,22.11 1 1
example.com/reach/reach.go:22.11,24.3 1 1
example.com/reach/reach.go:25.2,25.15 1 0
example.com/reach/reach.go:46.21,48.2 1 1
`

const sampleBaseline = `mode: count
example.com/reach/reach.go:8.37,11.2 2 0
example.com/reach/reach.go:13.34,13.48 1 1
example.com/reach/reach.go:46.21,48.2 1 1
`

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile(strings.NewReader(sampleProfile))
	if err != nil {
		t.Fatal(err)
	}
	base, err := ParseProfile(strings.NewReader(sampleBaseline))
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != "count" || len(p.Blocks) != 6 {
		t.Fatalf("profile %+v", p)
	}
	want := Block{File: "example.com/reach/reach.go", StartLine: 8, StartCol: 37, EndLine: 11, EndCol: 2, NumStmt: 2, Count: 1}
	if p.Blocks[0] != want {
		t.Errorf("block %+v, want %+v", p.Blocks[0], want)
	}
	const f = "example.com/reach/reach.go"
	for _, tc := range []struct {
		start, end int
		want       int
	}{
		{8, 11, 1},  // Set: ran once, never in the baseline
		{13, 13, 1}, // String: 3 times against 1
		{21, 26, 2}, // Early: two of its blocks ran, the last did not
		{25, 25, 0}, // the block that did not run
		{22, 23, 0}, // a span cutting blocks contains none of them
		{46, 48, 0}, // run exactly as often by initialization alone
		{1, 7, 0},
	} {
		if got := len(p.ExecutedIn(base, f, tc.start, tc.end)); got != tc.want {
			t.Errorf("ExecutedIn(%d, %d) = %d blocks, want %d", tc.start, tc.end, got, tc.want)
		}
	}
	if n := len(p.ExecutedIn(nil, f, 46, 48)); n != 1 {
		t.Errorf("without a baseline: %d blocks, want 1", n)
	}
	if n := len(p.ExecutedIn(base, "example.com/reach/other.go", 1, 100)); n != 0 {
		t.Errorf("another file: %d blocks", n)
	}

	t.Run("Merged", func(t *testing.T) {
		m, err := ParseProfile(strings.NewReader("mode: count\na/b.go:1.1,2.2 1 1\na/b.go:1.1,2.2 1 2\n"))
		if err != nil || len(m.Blocks) != 1 || m.Blocks[0].Count != 3 {
			t.Fatalf("merged: %+v, %v", m, err)
		}
	})
	for name, in := range map[string]string{
		"Empty":        "",
		"NoMode":       "a/b.go:1.1,2.2 1 1\n",
		"BadMode":      "mode: sometimes\n",
		"NoColon":      "mode: set\nab.go 1.1,2.2 1 1\n",
		"Fields":       "mode: set\na/b.go:1.1,2.2 1\n",
		"Backwards":    "mode: set\na/b.go:3.1,2.2 1 1\n",
		"BackwardsCol": "mode: set\na/b.go:3.5,3.2 1 1\n",
		"ZeroLine":     "mode: set\na/b.go:0.1,2.2 1 1\n",
		"Negative":     "mode: set\na/b.go:1.1,2.2 1 -1\n",
		"NotANumber":   "mode: set\na/b.go:1.1,2.2 1 x\n",
		"Conflicting":  "mode: set\na/b.go:1.1,2.2 1 1\na/b.go:1.1,2.2 2 1\n",
		"Overflow":     "mode: count\na/b.go:1.1,2.2 1 9223372036854775807\na/b.go:1.1,2.2 1 1\n",
		"LongLine":     "mode: set\n" + strings.Repeat("a", 5000) + ".go:1.1,2.2 1 1\n",
	} {
		t.Run("Err"+name, func(t *testing.T) {
			if p, err := ParseProfile(strings.NewReader(in)); err == nil {
				t.Errorf("ParseProfile = %+v, want an error", p)
			}
		})
	}
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(sampleProfile))
	f.Add([]byte(sampleBaseline))
	f.Add([]byte("mode: set\na:b/c.go:1.1,1.1 0 0\n"))
	f.Add([]byte("mode: atomic\r\nx.go:1.2,3.4 5 6\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, b := range p.Blocks {
			if b.File == "" || b.StartLine < 1 || b.EndLine < b.StartLine || b.Count < 0 || b.NumStmt < 0 {
				t.Fatalf("accepted block %+v", b)
			}
		}
		// The blocks are distinct, and asking about them never panics.
		seen := map[blockKey]bool{}
		for _, b := range p.Blocks {
			if seen[b.key()] {
				t.Fatalf("block %+v twice", b)
			}
			seen[b.key()] = true
			_ = p.ExecutedIn(p, b.File, b.StartLine, b.EndLine)
		}
	})
}

func TestProfile_ExecutedAt(t *testing.T) {
	p, err := ParseProfile(strings.NewReader(sampleProfile))
	if err != nil {
		t.Fatal(err)
	}
	base, err := ParseProfile(strings.NewReader(sampleBaseline))
	if err != nil {
		t.Fatal(err)
	}
	const f = "example.com/reach/reach.go"
	for _, tc := range []struct {
		line, col int
		want      bool
	}{
		{8, 37, true},  // the first byte of Set's block
		{10, 1, true},  // inside it
		{11, 2, false}, // its end is exclusive (the closing brace)
		{8, 36, false}, // before it
		{13, 40, true}, // String: more often than the baseline
		{22, 11, true}, // the start of the second block of Early
		{25, 5, false}, // the block that did not run
		{47, 3, false}, // as often as initialization alone
		{30, 1, false}, // no block at all
	} {
		if got := len(p.ExecutedAt(base, f, tc.line, tc.col)) > 0; got != tc.want {
			t.Errorf("ExecutedAt(%d:%d) = %v, want %v", tc.line, tc.col, got, tc.want)
		}
	}
}
