package goevidence

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flowA and flowB are two steps of a flow: main (in A) calls parse and
// s.run (in B).
const flowA = `package grep // 1

func main() { // 3
	cfg := parse() // 4
	s := &searcher{cfg: cfg}
	s.run() // 6
} // 7

func other() { run() } // 9

func generic() { pick[int]() } // 11
`

const flowB = `package grep // 1

type searcher struct{ cfg int } // 3

func parse() int { // 5
	return 1
} // 7

func (s *searcher) run() {} // 9

func pick[T any]() {} // 11
`

// otherPkg calls B's functions from another package.
const otherPkg = `package cli // 1

func main() { // 3
	parse()      // 4
	grep.parse() // 5
}
`

func TestCalls(t *testing.T) {
	type result struct {
		Callee string
		OK     bool
	}
	tests := []struct {
		name string
		srcA string
		a, b Span
		want result
	}{
		{"ViaIdent", flowA, Span{3, 7}, Span{5, 5}, result{"parse", true}},
		{"ViaSelector", flowA, Span{3, 7}, Span{9, 9}, result{"run", true}},
		{"ViaSelectorOneLine", flowA, Span{6, 6}, Span{9, 9}, result{"run", true}},
		{"FirstOfSeveral", flowA, Span{3, 7}, Span{1, 11}, result{"parse", true}},
		{"GenericInstantiation", flowA, Span{11, 11}, Span{11, 11}, result{"pick", true}},
		{"CallJustOutsideA", flowA, Span{4, 5}, Span{9, 9}, result{}},
		{"BBodyWithoutName", flowA, Span{3, 7}, Span{6, 7}, result{}},
		{"BareIdentIsNotMethod", flowA, Span{9, 9}, Span{9, 9}, result{}},
		{"OtherPackageBareIdent", otherPkg, Span{4, 4}, Span{5, 5}, result{}},
		{"OtherPackageSelector", otherPkg, Span{5, 5}, Span{5, 5}, result{"parse", true}},
		{"InvertedSpan", flowA, Span{7, 3}, Span{5, 5}, result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			callee, ok, err := Calls("a.go", []byte(tt.srcA), tt.a, "b.go", []byte(flowB), tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := (result{callee, ok}); got != tt.want {
				t.Errorf("Calls(%v, %v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
		})
	}
	t.Run("ErrParseA", func(t *testing.T) {
		if _, _, err := Calls("a.go", []byte(badSrc), Span{1, 3}, "b.go", []byte(flowB), Span{5, 5}); err == nil {
			t.Error("Calls from unparsable source: no error")
		}
	})
	t.Run("ErrParseB", func(t *testing.T) {
		if _, _, err := Calls("a.go", []byte(flowA), Span{3, 7}, "b.go", []byte(badSrc), Span{1, 3}); err == nil {
			t.Error("Calls into unparsable source: no error")
		}
	})
}

// reachPkg is one package directory: code, an internal test file and an
// external test file.
var reachPkg = map[string][]byte{
	"search.go": []byte(`package grep

var CRLF bool

func oneHop()    { CRLF = false }
func runSearch() { setMode() }
func setMode()   { CRLF = true }

func RunExported() { setMode() }

type searcher struct{}

func (s *searcher) run() { _ = "crlf" }

func ping() { pong() }
func pong() { ping() }

func loopA() { loopB() }
func loopB() { loopA(); setMode() }

func d0() { d1() }
func d1() { d2() }
func d2() { d3() }
func d3() { d4() }
func d4() { d5() }
func d5() { d6() }
func d6() { d7() }
func d7() { d8() }
func d8() { CRLF = true }
`),
	"search_test.go": []byte(`package grep

import "testing"

func TestDirect(t *testing.T)     { CRLF = true }
func TestHelper(t *testing.T)     { oneHop() }
func TestTwoHelpers(t *testing.T) { runSearch() }
func TestMethod(t *testing.T)     { s := &searcher{}; s.run() }
func TestCycle(t *testing.T)      { ping() }
func TestCycleThen(t *testing.T)  { loopA() }
func TestNone(t *testing.T)       { t.Log("nothing") }
func TestDepth8(t *testing.T)     { d1() }
func TestDepth9(t *testing.T)     { d0() }
func TestBareRun(t *testing.T)    { run() }
func TestClosure(t *testing.T) {
	t.Run("x", func(t *testing.T) { oneHop() })
}
`),
	"export_test.go": []byte(`package grep_test

import (
	"testing"

	"example.com/grep"
)

func TestExternal(t *testing.T) { grep.RunExported() }
`),
}

func TestReaches(t *testing.T) {
	crlf := Target{Idents: []string{"CRLF"}}
	type result struct {
		Chain []string
		OK    bool
	}
	tests := []struct {
		name, fn string
		target   Target
		want     result
	}{
		{"Direct", "TestDirect", crlf, result{[]string{"TestDirect"}, true}},
		{"ThroughHelper", "TestHelper", crlf, result{[]string{"TestHelper", "oneHop"}, true}},
		{"ThroughTwoHelpers", "TestTwoHelpers", crlf, result{[]string{"TestTwoHelpers", "runSearch", "setMode"}, true}},
		{"MethodByString", "TestMethod", Target{Strings: []string{"crlf"}}, result{[]string{"TestMethod", "searcher.run"}, true}},
		{"MethodNameIdent", "TestMethod", Target{Idents: []string{"run"}}, result{[]string{"TestMethod"}, true}},
		{"CycleNotReached", "TestCycle", crlf, result{}},
		{"CycleThenReached", "TestCycleThen", crlf, result{[]string{"TestCycleThen", "loopA", "loopB", "setMode"}, true}},
		{"NotReached", "TestNone", crlf, result{}},
		{"DepthLimitReached", "TestDepth8", crlf, result{[]string{"TestDepth8", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}, true}},
		{"DepthLimitExceeded", "TestDepth9", crlf, result{}},
		{"BareCallIsNotMethod", "TestBareRun", Target{Strings: []string{"crlf"}}, result{}},
		{"InsideClosure", "TestClosure", crlf, result{[]string{"TestClosure", "oneHop"}, true}},
		{"ExternalTestPackage", "TestExternal", crlf, result{[]string{"TestExternal", "RunExported", "setMode"}, true}},
		{"StartAtMethod", "searcher.run", Target{Strings: []string{"crlf"}}, result{[]string{"searcher.run"}, true}},
		{"EmptyTarget", "TestDirect", Target{}, result{}},
		{"UnknownFunc", "TestNope", crlf, result{}},
		{"TypeIsNotFunc", "searcher", crlf, result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain, ok, err := Reaches(reachPkg, tt.fn, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, result{chain, ok}); diff != "" {
				t.Errorf("Reaches(%q, %+v) mismatch (-want +got):\n%s", tt.fn, tt.target, diff)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		pkg := map[string][]byte{"a.go": []byte("package p\nfunc A() {}\n"), "b.go": []byte(badSrc)}
		if _, _, err := Reaches(pkg, "A", Target{Idents: []string{"A"}}); err == nil {
			t.Error("Reaches with an unparsable file: no error")
		}
	})
}
