package typecheck

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackage_ImplicitOptions: options implemented without a definition,
// as candidates — comparisons that guard a block (a switch case, an if,
// strings.EqualFold), named constants used as map keys or arguments — and
// what is none: a comparison guarding no block, a help text, a constant
// used otherwise, a test's comparison.
func TestPackage_ImplicitOptions(t *testing.T) {
	l := MustLoader(t, false)
	pkg := MustPackage(t, MustLoad(t, l, "flags.txtar", "parse.go"), "parse.go")
	flags, keys := []DefKind{DefFlag}, []DefKind{DefConfigKey}
	for _, tc := range []struct {
		name  string
		kinds []DefKind
		want  []string
	}{
		{"--help", flags, []string{"compare flag parse.go:17 guard 18-18"}},
		{"help", flags, []string{"compare flag parse.go:17 guard 18-18"}},
		{"-h, --help", flags, []string{"compare flag parse.go:17 guard 18-18", "compare flag parse.go:17 guard 18-18"}},
		{"--version", flags, nil}, // its case is empty
		{"-j", flags, []string{"compare flag parse.go:21 guard 22-22"}},
		{"--color", flags, []string{"compare flag parse.go:24 guard 25-25"}}, // EqualFold
		{"--zero", flags, nil},  // returned, guarding no block
		{"--usage", flags, nil}, // a help text
		{"timeout", keys, []string{"constant config_key parse.go:9 keyTimeout uses 37:13 37:34"}},
		{"TIMEOUT", keys, []string{"constant config_key parse.go:9 keyTimeout uses 37:13 37:34"}},
		{"TIMEOUT", []DefKind{DefEnv}, nil}, // an environment variable matches exactly
		{"retries", keys, nil},              // used, but neither as a key nor an argument
	} {
		var got []string
		for _, im := range pkg.ImplicitOptions(tc.name, tc.kinds...) {
			s := fmt.Sprintf("%s %s %s:%d", im.Kind, im.Def, im.File, im.Line)
			if im.Kind == ImplicitCompare {
				s += fmt.Sprintf(" guard %d-%d", im.Guard.Start, im.Guard.End)
			} else {
				s += " " + im.Constant + " uses"
				for _, u := range im.Uses {
					s += fmt.Sprintf(" %d:%d", u.Line, u.Col)
				}
			}
			got = append(got, s)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ImplicitOptions(%s) (-want +got)\n%s", tc.name, diff)
		}
	}
}
