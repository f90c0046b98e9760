package typecheck

import (
	"fmt"
	"go/types"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func calleeStrings(cs []Callee) []string {
	var out []string
	for _, c := range cs {
		s := fmt.Sprintf("%d %s %s", c.Line, c.Mode, c.Name)
		if c.Dynamic {
			s += " dynamic"
		}
		if c.External {
			s += " external"
		} else {
			s += fmt.Sprintf(" %s:%d %v", c.File, c.NameLine, c.Decl)
		}
		out = append(out, s)
	}
	return out
}

func mustFlow(t *testing.T) *Program {
	t.Helper()
	return MustLoad(t, MustLoader(t, false), "calls.txtar", "cli/cli.go", "cli/cli_test.go", "config/config.go")
}

func TestProgram_Calls(t *testing.T) {
	prog := mustFlow(t)
	for _, tc := range []struct {
		name       string
		file       string
		span       Span
		want       []string
		unresolved []int
	}{
		{"Run", "cli/cli.go", Span{12, 21}, []string{
			"13 call flag.NewFlagSet external",
			"14 call (*flag.FlagSet).Parse external",
			"15 call example.com/flow/config.Parse config/config.go:5 {5 12}",
			"20 call (*example.com/flow/cli.Runner).apply cli/cli.go:23 {23 30}",
		}, nil},
		{"apply", "cli/cli.go", Span{23, 30}, []string{
			"25 call (example.com/flow/config.Source).Load dynamic config/config.go:18 {0 0}",
			"26 method_value (*example.com/flow/cli.Runner).handler cli/cli.go:32 {32 32}",
			"28 func_value example.com/flow/config.Apply config/config.go:20 {20 20}",
		}, []int{27, 29}},
		{"generic", "cli/cli.go", Span{42, 42}, []string{
			"42 call example.com/flow/cli.Map cli/cli.go:34 {34 40}",
			"42 func_value strconv.Itoa external",
		}, nil},
		{"method value in a test", "cli/cli_test.go", Span{14, 18}, []string{
			"16 call (*testing.T).Run external",
			"16 method_value (example.com/flow/cli.tcase).test cli/cli_test.go:7 {7 12}",
		}, nil},
		{"one line of a body", "cli/cli.go", Span{14, 14}, []string{
			"14 call (*flag.FlagSet).Parse external",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unresolved, err := prog.Calls(tc.file, tc.span)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, calleeStrings(got)); diff != "" {
				t.Errorf("callees (-want +got)\n%s", diff)
			}
			var lines []int
			for _, u := range unresolved {
				lines = append(lines, u.Line)
			}
			if !slices.Equal(lines, tc.unresolved) {
				t.Errorf("unresolved at %v, want %v (%+v)", lines, tc.unresolved, unresolved)
			}
		})
	}
}

func TestProgram_Links(t *testing.T) {
	prog := mustFlow(t)
	for _, tc := range []struct {
		name     string
		from     Span
		toFile   string
		to       Span
		want     []string
		wantKind LinkKind
	}{
		// goFlagSet.Parse is the standard library's Parse, not config.Parse.
		{"same name, other package", Span{14, 14}, "config/config.go", Span{5, 12}, nil, 0},
		{"declared", Span{15, 15}, "config/config.go", Span{5, 12}, []string{"example.com/flow/config.Parse"}, LinkDeclared},
		{"declared, doc-less one-line span", Span{15, 15}, "config/config.go", Span{5, 5}, []string{"example.com/flow/config.Parse"}, LinkDeclared},
		{"enters the body", Span{15, 15}, "config/config.go", Span{10, 10}, []string{"example.com/flow/config.Parse"}, LinkEnters},
		{"interface call: no concrete method", Span{23, 30}, "config/config.go", Span{16, 16}, nil, 0},
		{"method value", Span{26, 26}, "cli/cli.go", Span{32, 32}, []string{"(*example.com/flow/cli.Runner).handler"}, LinkDeclared},
		{"function value", Span{28, 28}, "config/config.go", Span{20, 20}, []string{"example.com/flow/config.Apply"}, LinkDeclared},
		{"call through a variable", Span{29, 29}, "config/config.go", Span{20, 20}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			links, err := prog.Links("cli/cli.go", tc.from, tc.toFile, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range links {
				names = append(names, l.Callee.Name)
				if l.Kind != tc.wantKind {
					t.Errorf("%s: kind %v, want %v", l.Callee.Name, l.Kind, tc.wantKind)
				}
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("links %v, want %v", names, tc.want)
			}
		})
	}
}

func TestProgram_StaticPath(t *testing.T) {
	prog := mustFlow(t)
	config := MustPackage(t, prog, "config/config.go")
	cli := MustPackage(t, prog, "cli/cli.go")
	fn := func(pkg *Package, subject string) *types.Func {
		d, err := pkg.Lookup(subject)
		if err != nil {
			t.Fatal(err)
		}
		return d.Object.(*types.Func)
	}
	for _, tc := range []struct {
		name   string
		from   Span
		target *types.Func
		want   []string
	}{
		{"through a method value", Span{14, 18}, fn(config, "Parse"), []string{
			"(example.com/flow/cli.tcase).test", "(*example.com/flow/cli.Runner).Run", "example.com/flow/config.Parse"}},
		{"two packages deep", Span{14, 18}, fn(config, "Config.set"), []string{
			"(example.com/flow/cli.tcase).test", "(*example.com/flow/cli.Runner).Run", "example.com/flow/config.Parse", "(*example.com/flow/config.Config).set"}},
		{"through a function value", Span{14, 18}, fn(config, "Apply"), []string{
			"(example.com/flow/cli.tcase).test", "(*example.com/flow/cli.Runner).Run", "(*example.com/flow/cli.Runner).apply", "example.com/flow/config.Apply"}},
		// An interface call is followed to the types that implement it.
		{"only through an interface", Span{14, 18}, fn(config, "Config.Load"), []string{
			"(example.com/flow/cli.tcase).test", "(*example.com/flow/cli.Runner).Run", "(*example.com/flow/cli.Runner).apply", "(*example.com/flow/config.Config).Load"}},
		// Static reach is not execution: the closure is never called, yet
		// the path exists in the code.
		{"closure never called", Span{20, 23}, fn(cli, "Runner.handler"), []string{"(*example.com/flow/cli.Runner).handler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Names(nil)
			for _, c := range prog.StaticPath("cli/cli_test.go", tc.from, tc.target, 8) {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("path %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("DepthBound", func(t *testing.T) {
		if p := prog.StaticPath("cli/cli_test.go", Span{14, 18}, fn(config, "Config.set"), 3); p != nil {
			t.Errorf("path of 4 found within depth 3: %v", calleeStrings(p))
		}
	})
}
