package typecheck

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPackage_Lookup(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "symbols.txtar", "command.go", "ext_test.go")
	pkg := MustPackage(t, prog, "command.go")

	type want struct {
		kind      DeclKind
		file      string
		span, doc Span
		body      Span
	}
	for _, tc := range []struct {
		subject string
		want    want
	}{
		// Methods with pointer and value receivers, written every way models write them.
		{"Command.Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"(*Command).Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"sym.Command.Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"Command.Flag()", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"sym.(*Command).Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"example.com/sym.(*Command).Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"example.com/sym.Command.Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"func (c *Command) Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"(c *Command) Flag(name string)", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"Command.Flag(name string) *Flag", want{DeclMethod, "command.go", Span{18, 20}, Span{16, 20}, Span{18, 20}}},
		{"Command.Flags", want{DeclMethod, "command.go", Span{23, 23}, Span{22, 23}, Span{23, 23}}},
		{"Options.Verbose", want{DeclMethod, "command.go", Span{29, 29}, Span{28, 29}, Span{29, 29}}},
		{"Command", want{DeclType, "command.go", Span{9, 14}, Span{8, 14}, Span{}}},
		{"Usage", want{DeclType, "command.go", Span{32, 32}, Span{31, 32}, Span{}}},
		// IP is this package's function, whatever net.IP is.
		{"IP", want{DeclFunc, "ip.go", Span{6, 8}, Span{5, 8}, Span{6, 8}}},
		{"sym.IP", want{DeclFunc, "ip.go", Span{6, 8}, Span{5, 8}, Span{6, 8}}},
		{"example.com/sym.IP", want{DeclFunc, "ip.go", Span{6, 8}, Span{5, 8}, Span{6, 8}}},
		// Generic receivers.
		{"List.Push", want{DeclMethod, "generic.go", Span{7, 7}, Span{6, 7}, Span{7, 7}}},
		{"List[T].Push", want{DeclMethod, "generic.go", Span{7, 7}, Span{6, 7}, Span{7, 7}}},
		{"(*List[T]).Push", want{DeclMethod, "generic.go", Span{7, 7}, Span{6, 7}, Span{7, 7}}},
		{"List.Len", want{DeclMethod, "generic.go", Span{10, 10}, Span{9, 10}, Span{10, 10}}},
		{"Pair[K, V].Key", want{DeclMethod, "generic.go", Span{19, 19}, Span{18, 19}, Span{19, 19}}},
		// Specs in groups start at the spec; a lone one at its keyword.
		{"A", want{DeclConst, "decls.go", Span{8, 8}, Span{7, 8}, Span{}}},
		{"B", want{DeclConst, "decls.go", Span{9, 9}, Span{9, 9}, Span{}}},
		{"Single", want{DeclVar, "decls.go", Span{13, 13}, Span{12, 13}, Span{}}},
		{"Reader", want{DeclType, "decls.go", Span{17, 21}, Span{16, 21}, Span{}}},
		{"Reader.Read", want{DeclInterfaceMethod, "decls.go", Span{19, 19}, Span{18, 19}, Span{}}},
		{"Base.Hello", want{DeclMethod, "decls.go", Span{28, 28}, Span{27, 28}, Span{28, 28}}},
		// Methods of an alias's target, asked through the alias.
		{"Alias.Verbose", want{DeclMethod, "command.go", Span{29, 29}, Span{28, 29}, Span{29, 29}}},
		// A declaration of a test file of the package.
		{"helperInTest", want{DeclFunc, "sym_test.go", Span{5, 5}, Span{5, 5}, Span{5, 5}}},
		// A method of a type embedding a missing type is still found.
		{"Remote.Local", want{DeclMethod, "gone.go", Span{11, 11}, Span{10, 11}, Span{11, 11}}},
	} {
		t.Run(tc.subject, func(t *testing.T) {
			d, err := pkg.Lookup(tc.subject)
			if err != nil {
				t.Fatal(err)
			}
			got := want{d.Kind, d.File, d.Span, d.Doc, d.Body}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}

	t.Run("Group", func(t *testing.T) {
		d, err := pkg.Lookup("B")
		if err != nil {
			t.Fatal(err)
		}
		if want := (Span{5, 10}); d.Group != want {
			t.Errorf("Group = %v, want %v", d.Group, want)
		}
	})

	for _, tc := range []struct {
		subject string
		kind    Kind
	}{
		{"Command.Verbose", KindFieldNotMethod}, // a field, though Options has a method Verbose
		{"Command.flags", KindFieldNotMethod},
		{"Derived.Hello", KindPromoted}, // declared on Base
		{"Derived.Read", KindPromoted},  // promoted from the embedded interface
		{"Derived.Base", KindFieldNotMethod},
		{"Command.Usage", KindNotDeclared}, // Usage is a type, not a member of Command
		{"Command.Lookup", KindNotDeclared},
		{"Peer.String", KindNotAType},
		{"IP.String", KindNotAType},      // the String of net.IP is not this IP's
		{"Flag", KindNotDeclared},        // only the external test package declares a Flag
		{"OnlyWindows", KindNotDeclared}, // excluded by its file name
		{"main", KindNotDeclared},        // excluded by //go:build ignore
		{"Remote.Call", KindMissingTypes},
		{"other.Command", KindNotDeclared},
		{"example.com/other.IP", KindNotDeclared}, // another package's IP, by its import path
		{"net.IP", KindNotDeclared},
		{"example.com/sym.(*Options).Flag", KindNotDeclared},
		{"sym.(*Command)", KindSubject},
		{"(c *Command)Flag", KindSubject},
		{"/sym.IP", KindSubject},
		{"example.com/sym", KindSubject},
		{"Command.Flag.Name", KindNotDeclared},
		{"1abc", KindSubject},
		{"", KindSubject},
		{"(Command.Flag", KindSubject},
		{"a.b.c.d", KindSubject},
	} {
		t.Run("Err/"+tc.subject, func(t *testing.T) {
			d, err := pkg.Lookup(tc.subject)
			if err == nil {
				t.Fatalf("Lookup = %+v, want a %v error", d, tc.kind)
			}
			if got := KindOf(err); got != tc.kind {
				t.Fatalf("error %v: kind %v, want %v", err, got, tc.kind)
			}
		})
	}

	t.Run("ExternalTestPackage", func(t *testing.T) {
		xpkg := MustPackage(t, prog, "ext_test.go")
		if xpkg.Path != "example.com/sym_test" {
			t.Fatalf("package %s", xpkg.Path)
		}
		d, err := xpkg.Lookup("Flag")
		if err != nil || d.File != "ext_test.go" || d.Span != (Span{15, 15}) {
			t.Fatalf("Lookup(Flag) = %+v, %v", d, err)
		}
		if _, err := xpkg.Lookup("IP"); KindOf(err) != KindNotDeclared {
			t.Fatalf("IP in the external test package: %v", err)
		}
	})

	t.Run("TypeErrorsElsewhere", func(t *testing.T) {
		if len(pkg.Errors) == 0 {
			t.Fatal("no type errors recorded for the uses of the missing package")
		}
		if !slices.Contains(pkg.Missing, "example.com/gone") {
			t.Fatalf("Missing = %v", pkg.Missing)
		}
		if why := prog.Missing["example.com/gone"]; why == "" {
			t.Fatalf("Program.Missing = %v", prog.Missing)
		}
	})
}

func TestProgram_PackageOf(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "symbols.txtar", "command.go", "windows_only_windows.go", "ignored.go", "notgo.txt", "nosuch/x.go", "../escape.go")
	for file, kind := range map[string]Kind{
		"windows_only_windows.go": KindNotInBuild,
		"ignored.go":              KindNotInBuild,
		"notgo.txt":               KindNotGo,
		"../escape.go":            KindNoModule,
	} {
		_, err := prog.PackageOf(file)
		var e *Error
		if !errors.As(err, &e) || e.Kind != kind {
			t.Errorf("PackageOf(%s) = %v, want kind %v", file, err, kind)
		}
	}
	if _, err := prog.PackageOf("nosuch/x.go"); err == nil {
		t.Error("PackageOf(nosuch/x.go) succeeded")
	}
	if pkg := MustPackage(t, prog, "command.go"); pkg.Path != "example.com/sym" {
		t.Errorf("package %s", pkg.Path)
	}
	// The dependencies: go.mod and every Go file of the package's directory,
	// those excluded by build constraints included.
	var deps []string
	for _, d := range prog.Deps {
		deps = append(deps, d.Path)
	}
	for _, want := range []string{"go.mod", "command.go", "ip.go", "sym_test.go", "ext_test.go", "windows_only_windows.go", "ignored.go"} {
		if !slices.Contains(deps, want) {
			t.Errorf("Deps lack %s: %v", want, deps)
		}
	}
	if !slices.Equal(prog.Dirs, []string{"."}) {
		t.Errorf("Dirs = %v", prog.Dirs)
	}
}

// TestPackage_DeclAt finds the declaration holding a line, doc comment
// included, and names it as a subject would. Lines are those of
// symbols.txtar's files.
func TestPackage_DeclAt(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "symbols.txtar", "command.go", "generic.go")
	for _, tc := range []struct {
		file string
		line int
		want string // "" for none
	}{
		{"command.go", 8, "Command"},  // its doc comment
		{"command.go", 11, "Command"}, // a field line belongs to the type
		{"command.go", 19, "Command.Flag"},
		{"command.go", 16, "Command.Flag"},
		{"command.go", 23, "Command.Flags"},
		{"command.go", 4, ""},          // an import
		{"command.go", 15, ""},         // between declarations
		{"generic.go", 7, "List.Push"}, // a generic receiver
	} {
		d, ok := MustPackage(t, prog, tc.file).DeclAt(tc.file, tc.line)
		got := ""
		if ok {
			got = d.Name()
		}
		if got != tc.want {
			t.Errorf("DeclAt(%s:%d) = %q, want %q", tc.file, tc.line, got, tc.want)
		}
	}
}
