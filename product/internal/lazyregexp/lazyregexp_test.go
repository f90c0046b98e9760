package lazyregexp

import (
	"regexp"
	"strings"
	"testing"
)

// TestRegexp_MatchesAsRegexp checks every method against the compiled
// expression of package regexp, the oracle.
func TestRegexp_MatchesAsRegexp(t *testing.T) {
	const expr = `(\w+)=(\d+)`
	lazy, want := New(expr), regexp.MustCompile(expr)
	in := "a=1 b=22 c=x d=333"
	if lazy.String() != expr || lazy.Regexp().String() != want.String() {
		t.Fatalf("String %q / %q, want %q", lazy.String(), lazy.Regexp().String(), expr)
	}
	if got := lazy.MatchString(in); got != want.MatchString(in) {
		t.Errorf("MatchString = %v", got)
	}
	if got, w := strings.Join(lazy.FindStringSubmatch(in), ","), strings.Join(want.FindStringSubmatch(in), ","); got != w {
		t.Errorf("FindStringSubmatch = %q, want %q", got, w)
	}
	if got, w := strings.Join(lazy.FindAllString(in, -1), ","), strings.Join(want.FindAllString(in, -1), ","); got != w {
		t.Errorf("FindAllString = %q, want %q", got, w)
	}
	got, w := lazy.FindAllStringSubmatchIndex(in, 2), want.FindAllStringSubmatchIndex(in, 2)
	if len(got) != len(w) || len(got) == 0 || got[1][3] != w[1][3] {
		t.Errorf("FindAllStringSubmatchIndex = %v, want %v", got, w)
	}
	up := func(s string) string { return strings.ToUpper(s) }
	if got, w := lazy.ReplaceAllStringFunc(in, up), want.ReplaceAllStringFunc(in, up); got != w {
		t.Errorf("ReplaceAllStringFunc = %q, want %q", got, w)
	}
}

// TestNew_CompilesAtOnceInTests: a bad expression fails the test binary
// that declares it. The child is this test binary, run to a helper that
// declares a bad expression.
func TestNew_CompilesAtOnceInTests(t *testing.T) {
	if !inTest {
		t.Fatal("a go test binary is not recognised as one")
	}
	defer func() {
		if recover() == nil {
			t.Error("New of a bad expression did not panic in a test binary")
		}
	}()
	New(`(`)
}

// TestNew_DefersOutsideTests: outside a test binary nothing compiles
// before the first use, and the first use panics on a bad expression as
// regexp.MustCompile does.
func TestNew_DefersOutsideTests(t *testing.T) {
	inTest = false
	defer func() { inTest = true }()
	bad := New(`(`)
	if bad.String() != `(` {
		t.Fatalf("String = %q", bad.String())
	}
	defer func() {
		if recover() == nil {
			t.Error("the first use of a bad expression did not panic")
		}
	}()
	bad.MatchString("x")
}
