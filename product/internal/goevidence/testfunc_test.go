package goevidence

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// renamedSrc imports testing as tst; every function but the first few has a
// signature go test would refuse.
const renamedSrc = `package p_test // 1

import (
	tst "testing"
)

func TestRenamed(t *tst.T) { // 7
	t.Log("x")
} // 9

func TestUnnamedParam(*tst.T) {} // 11

func Test(t *tst.T) {} // 13

func Test_under(t *tst.T) {} // 15

func TestBench(b *tst.B) {}

func TestNoArgs() {}

type S struct{}

func (S) TestMethod(t *tst.T) {}

func TestTwo(t *tst.T, u int) {}

func TestPair(t, u *tst.T) {}

func TestResult(t *tst.T) error { return nil }

func TestGeneric[P any](t *tst.T) {}

func TestValue(t tst.T) {}

func TestUnimported(t *testing.T) {}

func Testlower(t *tst.T) {}
`

const plainSrc = `package p

import "testing"

func TestPlain(t *testing.T) {} // 5

func BenchmarkPlain(b *testing.B) {}
`

const dotSrc = `package p

import . "testing"

func TestDot(t *T) {} // 5
`

const blankSrc = `package p

import _ "testing"

type T struct{}

func TestBlank(t *T) {}
`

func TestTestFunc(t *testing.T) {
	type result struct {
		Span Span
		OK   bool
	}
	tests := []struct {
		name, file, src, fn string
		want                result
	}{
		{"Renamed", "p_test.go", renamedSrc, "TestRenamed", result{Span{7, 9}, true}},
		{"UnnamedParam", "p_test.go", renamedSrc, "TestUnnamedParam", result{Span{11, 11}, true}},
		{"BareTest", "p_test.go", renamedSrc, "Test", result{Span{13, 13}, true}},
		{"Underscore", "p_test.go", renamedSrc, "Test_under", result{Span{15, 15}, true}},
		{"Plain", "dir/p_test.go", plainSrc, "TestPlain", result{Span{5, 5}, true}},
		{"DotImport", "p_test.go", dotSrc, "TestDot", result{Span{5, 5}, true}},
		{"Benchmark", "p_test.go", renamedSrc, "TestBench", result{}},
		{"NoParams", "p_test.go", renamedSrc, "TestNoArgs", result{}},
		{"Method", "p_test.go", renamedSrc, "TestMethod", result{}},
		{"TwoParams", "p_test.go", renamedSrc, "TestTwo", result{}},
		{"TwoNames", "p_test.go", renamedSrc, "TestPair", result{}},
		{"Result", "p_test.go", renamedSrc, "TestResult", result{}},
		{"TypeParams", "p_test.go", renamedSrc, "TestGeneric", result{}},
		{"NotPointer", "p_test.go", renamedSrc, "TestValue", result{}},
		{"OldNameAfterRename", "p_test.go", renamedSrc, "TestUnimported", result{}},
		{"LowerCaseAfterTest", "p_test.go", renamedSrc, "Testlower", result{}},
		{"NotTestPrefix", "p_test.go", plainSrc, "BenchmarkPlain", result{}},
		{"Missing", "p_test.go", plainSrc, "TestNope", result{}},
		{"BlankImportLocalT", "p_test.go", blankSrc, "TestBlank", result{}},
		{"NotTestFile", "p.go", plainSrc, "TestPlain", result{}},
		{"IgnoredTestFile", "dir/_p_test.go", plainSrc, "TestPlain", result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			span, ok, err := TestFunc(tt.file, []byte(tt.src), tt.fn)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, result{span, ok}); diff != "" {
				t.Errorf("TestFunc(%q, %q) mismatch (-want +got):\n%s", tt.file, tt.fn, diff)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		if _, _, err := TestFunc("p_test.go", []byte(badSrc), "TestX"); err == nil {
			t.Error("TestFunc of unparsable source: no error")
		}
	})
}

func TestTestFuncs(t *testing.T) {
	src := []byte(`package p

import tst "testing"

func TestA(t *tst.T)      {}
func helper(t *tst.T)     {}
func TestB(t *tst.B)      {}
func Testlower(t *tst.T)  {}
func (s) TestM(t *tst.T)  {}
func TestC(t *tst.T)      {}
`)
	got, err := TestFuncs("p_test.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestA", "TestC"}; !cmp.Equal(got, want) {
		t.Errorf("TestFuncs = %v, want %v", got, want)
	}
	if got, err := TestFuncs("p.go", src); err != nil || got != nil {
		t.Errorf("non-test file: %v, %v", got, err)
	}
	if _, err := TestFuncs("p_test.go", []byte("package")); err == nil {
		t.Error("parse error not returned")
	}
}
