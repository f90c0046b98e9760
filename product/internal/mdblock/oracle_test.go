package mdblock

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// The oracle: goldmark, an independent CommonMark parser, says which lines
// belong to paragraphs and setext headings that are children of the
// document. It shares no code with Lines.

var atxLine = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]|$)`)

func oracle(src string) []bool {
	// CR LF and LF end lines alike (CommonMark 0.31, section 2.1);
	// goldmark takes a CR before LF for content in places ("-\r\n" is not
	// an empty list item to it), so it reads LF endings only.
	src = strings.ReplaceAll(src, "\r\n", "\n")
	source := []byte(src)
	doc := goldmark.New().Parser().Parse(text.NewReader(source))
	starts := []int{0} // byte offset of each line (LF and CR LF endings only)
	for i, c := range source {
		if c == '\n' && i+1 < len(source) {
			starts = append(starts, i+1)
		}
	}
	if src == "" {
		starts = nil
	}
	top := make([]bool, len(starts))
	lineOf := func(off int) int {
		i, _ := slices.BinarySearch(starts, off+1)
		return i - 1
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if n.Kind() != ast.KindParagraph && n.Kind() != ast.KindHeading {
			continue
		}
		lines := n.Lines()
		if n.Kind() == ast.KindHeading && lines.Len() <= 1 {
			if lines.Len() == 0 {
				continue
			}
			if l := lineOf(lines.At(0).Start); atxLine.MatchString(lineText(src, starts, l)) {
				continue
			}
		}
		for i := range lines.Len() {
			top[lineOf(lines.At(i).Start)] = true
		}
	}
	return top
}

func lineText(src string, starts []int, l int) string {
	end := len(src)
	if l+1 < len(starts) {
		end = starts[l+1]
	}
	return strings.TrimRight(src[starts[l]:end], "\r\n")
}

// generator writes messages the way coding models write them: prose, the
// marker, fenced and indented code, quotes, lists, headings, rules and a
// little HTML, mixed line by line so the blocks interact.
type generator struct{ pick func(n int) int }

var fragments = []func(g generator) []string{
	func(generator) []string { return []string{"I need the implementation first."} },
	func(generator) []string {
		return []string{"Let me look at `@@need locate.implementation symbol:Greet` first."}
	},
	func(g generator) []string { return []string{g.indent() + "@@need locate.implementation symbol:Greet"} },
	func(g generator) []string {
		return []string{g.indent() + "@@need tests.relevant symbol:Greet task=\"why\""}
	},
	func(generator) []string { return []string{""} },
	func(generator) []string { return []string{"", ""} },
	func(g generator) []string {
		fence := []string{"```", "~~~", "````", "```go", "~~~ text", " ```", "   ~~~~"}[g.pick(7)]
		body := []string{"@@need locate.implementation symbol:Greet", "func Greet() {}", ""}
		out := []string{fence, body[g.pick(3)]}
		if g.pick(4) > 0 { // sometimes left open
			out = append(out, []string{"```", "~~~", "````", "``` x", "  ```", "~~~~~"}[g.pick(6)])
		}
		return out
	},
	func(g generator) []string {
		return []string{[]string{"    ", "\t", "  \t", "     "}[g.pick(4)] + "@@need locate.implementation symbol:X"}
	},
	func(g generator) []string {
		return []string{[]string{"> ", ">", "  > ", "> > "}[g.pick(4)] + g.inner()}
	},
	func(g generator) []string {
		return []string{[]string{"- ", "* ", "1. ", "2) ", "+ ", "10. ", "-   ", "- \t"}[g.pick(8)] + g.inner()}
	},
	func(g generator) []string { return []string{[]string{"  ", "   ", "\t", " "}[g.pick(4)] + g.inner()} },
	func(g generator) []string {
		// An empty item and the line after it. goldmark 1.8.7 takes a list
		// marker as the first content of an empty item for a sibling item
		// (yuin/goldmark#466, against the specification and commonmark.js
		// 0.31): that case is in TestLines_Examples instead.
		return []string{[]string{"-", "*", "1."}[g.pick(3)], []string{"  some words", "  @@need locate.implementation symbol:Greet", "   ```", "", "text", "> x"}[g.pick(6)]}
	},
	func(g generator) []string {
		return []string{[]string{"# Plan", "## @@need x y", "---", "===", "***", "- - -", "#hashtag", "___"}[g.pick(8)]}
	},
	func(g generator) []string {
		return []string{[]string{"<details>", "</details>", "<summary>Why</summary>", "<!-- note", "-->", "<br>", "<div align=\"center\">", "<span>x</span>", "<pre>", "</pre>", "<a href=\"x\">"}[g.pick(11)]}
	},
}

func (g generator) indent() string { return []string{"", "", " ", "  ", "   "}[g.pick(5)] }

// inner is what follows a container marker.
func (g generator) inner() string {
	return []string{"@@need locate.implementation symbol:Greet", "some words", "```", "", "- nested", "> quoted", "    code"}[g.pick(7)]
}

func (g generator) message() string {
	var lines []string
	for n := 1 + g.pick(12); n > 0; n-- {
		lines = append(lines, fragments[g.pick(len(fragments))](g)...)
	}
	eol := []string{"\n", "\n", "\r\n"}[g.pick(3)]
	msg := strings.Join(lines, eol)
	if g.pick(3) == 0 {
		msg += eol
	}
	return msg
}

func compare(t *testing.T, msg string) {
	t.Helper()
	got := Lines(msg)
	want := oracle(msg)
	if len(got) != len(want) {
		t.Fatalf("%q: %d lines, the oracle %d", msg, len(got), len(want))
	}
	for i := range got {
		if got[i].TopLevel != want[i] {
			t.Fatalf("%q: line %d (%q) top-level = %v, goldmark says %v", msg, i, got[i].Text, got[i].TopLevel, want[i])
		}
	}
}

func TestLines_Oracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	g := generator{pick: r.IntN}
	for range 20000 {
		compare(t, g.message())
	}
}

// FuzzLines drives the generator with the fuzzer's bytes.
func FuzzLines(f *testing.F) {
	f.Add([]byte{3, 1, 2, 0, 6, 2, 1})
	f.Add([]byte{5, 8, 0, 2, 9, 1, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		i := 0
		g := generator{pick: func(n int) int {
			if i >= len(data) {
				return 0
			}
			i++
			return int(data[i-1]) % n
		}}
		compare(t, g.message())
	})
}

func TestLines_Examples(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // one character per line: T top-level text, . other
	}{
		{"", ""},
		{"a\nb", "TT"},
		{"a\n\nb\n", "T.T"},
		{"```\na\n```\nb", "...T"},
		{"```\na", ".."},                   // an unclosed fence runs to the end
		{"~~~\na\n```\nb", "...."},         // a fence closes only with its own character
		{"````\na\n```\nb\n````", "....."}, // nor with a shorter run
		{"    a\nb", ".T"},
		{"a\n    b", "TT"}, // indented text continues a paragraph
		{"> a\nb", ".."},   // a lazy continuation stays in the quote
		{"> a\n\nb", "..T"},
		{"- a\nb", ".."},
		{"- a\n\nb", "..T"},
		{"- a\n\n  b", "..."},
		{"-\n\n  a", "..T"}, // an item may start with one blank line only
		{"a\n---", "T."},
		{"a\n- b", "T."},
		{"a\n2. b", "TT"}, // only a list starting at 1 interrupts a paragraph
		{"<details>\na\n\nb", "...T"},
		{"<!-- a\nb -->\nc", "..T"},
		{"a\n<span>\nb", "TTT"}, // kind 7 does not interrupt a paragraph
		{"a\r\nb\rc", "TTT"},
		{"\t- a\nb", ".T"},
		// An empty item's first content may be a list (commonmark.js 0.31
		// agrees; goldmark 1.8.7 does not, yuin/goldmark#466).
		{"*\n   - nested\n   ~~~~\nfunc Greet() {}", "...T"},
		{"-\n  - a\nb", "..."},
	} {
		got := Lines(tc.src)
		var b strings.Builder
		for _, l := range got {
			b.WriteByte(map[bool]byte{true: 'T', false: '.'}[l.TopLevel])
		}
		if b.String() != tc.want {
			t.Errorf("Lines(%q) = %s, want %s", tc.src, b.String(), tc.want)
		}
	}
}

func ExampleLines() {
	for _, l := range Lines("Here is how:\n```\n@@need x y\n```\n@@need x y\n> @@need x y") {
		fmt.Println(l.TopLevel, l.Text)
	}
	// Output:
	// true Here is how:
	// false ```
	// false @@need x y
	// false ```
	// true @@need x y
	// false > @@need x y
}

// FuzzLinesAny feeds arbitrary text: Lines never fails and keeps every
// line's text.
func FuzzLinesAny(f *testing.F) {
	f.Add("> a\n- b\n```\n\tc\r\n<!--\rd")
	f.Fuzz(func(t *testing.T, src string) {
		lines := Lines(src)
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.Text)
		}
		if b.String() != strings.NewReplacer("\r\n", "", "\r", "", "\n", "").Replace(src) {
			t.Fatalf("Lines(%q) lost text", src)
		}
	})
}

// TestLines_DeepNesting: past the nesting bound container markers are
// text, so a line that opens a million list items, and the blank lines
// that would continue every one of them, cost time in proportion to their
// length (BenchmarkLines_DeepNesting measures it).
func TestLines_DeepNesting(t *testing.T) {
	lines := Lines(deepNesting(1 << 12))
	if n := len(lines); n != 1<<12+2 || lines[0].TopLevel || !lines[n-1].TopLevel {
		t.Errorf("%d lines; first top-level %v, last %v", n, lines[0].TopLevel, lines[n-1].TopLevel)
	}
}

// deepNesting is n nested list items, n blank lines and a paragraph.
func deepNesting(n int) string {
	return strings.Repeat("- ", n) + "x\n" + strings.Repeat("\n", n) + "y"
}

func BenchmarkLines_DeepNesting(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 14, 1 << 18} {
		src := deepNesting(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				Lines(src)
			}
		})
	}
}

// BenchmarkLines measures a long message in the generator's dialect.
func BenchmarkLines(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	g := generator{pick: r.IntN}
	var msg strings.Builder
	for msg.Len() < 64<<10 {
		msg.WriteString(g.message() + "\n\n")
	}
	src := msg.String()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Lines(src)
	}
}
