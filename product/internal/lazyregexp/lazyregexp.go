// Package lazyregexp is a regular expression compiled on its first use.
//
// A package-level regexp.MustCompile runs in the package's init, in every
// process that links the package, whether or not it ever matches anything:
// needle mcp serve paid for the Markdown, test-name and hook-file
// expressions of commands it never runs before it could answer initialize
// (issue 13). A Regexp here compiles once, when first matched. In a test
// binary it compiles at once, so a bad expression still fails the tests of
// its package rather than the first user to reach it.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regular expression compiled on its first use; safe for
// concurrent use, like regexp.Regexp.
type Regexp struct {
	expr string
	once sync.Once
	rx   *regexp.Regexp
}

// inTest reports whether this is a go test binary (named *.test).
var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

// New returns the expression expr, compiled when first used; it panics then
// if expr does not compile (regexp.MustCompile), and at once in a test.
func New(expr string) *Regexp {
	r := &Regexp{expr: expr}
	if inTest {
		r.Regexp()
	}
	return r
}

// Regexp returns the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.expr) })
	return r.rx
}

// String returns the source text of the expression.
func (r *Regexp) String() string { return r.expr }

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.Regexp().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Regexp().FindStringSubmatch(s) }

// FindAllString is regexp.Regexp.FindAllString.
func (r *Regexp) FindAllString(s string, n int) []string { return r.Regexp().FindAllString(s, n) }

// FindAllStringSubmatchIndex is regexp.Regexp.FindAllStringSubmatchIndex.
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.Regexp().FindAllStringSubmatchIndex(s, n)
}

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Regexp().ReplaceAllStringFunc(src, repl)
}
