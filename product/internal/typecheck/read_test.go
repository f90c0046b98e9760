package typecheck

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestPackage_Reads finds where an option's value is read: the variable a
// definition binds, a look-up by name, the function a definition registers,
// the environment read itself. Writes, the definition's own &v, a bare
// Lookup guard and a test passing the flag are not reads.
func TestPackage_Reads(t *testing.T) {
	l := MustLoader(t, false)
	prog := MustLoad(t, l, "options.txtar", "std.go", "cobra.go", "other.go", "opts_test.go")
	pkg := MustPackage(t, prog, "std.go")
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"--verbose", []string{"variable:std.go:29"}},                      // *verbose; fs.Lookup("verbose") then f.Value.Set is a guard and a write
		{"--help", []string{"by_name:cobra.go:26", "by_name:cobra.go:29"}}, // Changed("help"), GetBool("help"); not the test's "--help"
		{"--name", nil},                                  // bound by &name, only written (fs.Set)
		{"HOME", []string{"env:std.go:25"}},              // os.Getenv is the read
		{"server.port", []string{"by_name:other.go:16"}}, // viper.GetInt, case-insensitively
		{"--each", []string{"setter:std.go:18"}},         // the function flag.Func registers
		{"--log-level", []string{"variable:std.go:29"}},  // a name built from constants
	} {
		defs, _ := pkg.FindOption(tc.name, DefFlag, DefEnv, DefConfigKey)
		var got []string
		for _, r := range pkg.Reads(tc.name, defs) {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.File, r.Line))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Reads(%s) (-want +got)\n%s", tc.name, diff)
		}
	}
}

// TestPackage_ReadsFields: a field a definition binds through &o.f or by
// assignment is read where the field is read (a write is not); a flag.Value
// declared in the package is read by its Set method.
func TestPackage_ReadsFields(t *testing.T) {
	l := MustLoader(t, false)
	pkg := MustPackage(t, MustLoad(t, l, "reads.txtar", "cmd.go"), "cmd.go")
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"--verbose", []string{"variable:cmd.go:37"}},
		{"--level", []string{"variable:cmd.go:40"}},
		{"--tag", []string{"setter:cmd.go:18"}},
	} {
		defs, _ := pkg.FindOption(tc.name, DefFlag)
		if len(defs) != 1 {
			t.Fatalf("%s: definitions %+v", tc.name, defs)
		}
		var got []string
		for _, r := range pkg.Reads(tc.name, defs) {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.File, r.Line))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Reads(%s) (-want +got)\n%s", tc.name, diff)
		}
	}
}

// TestPackage_ReadsByMeaning: the reads of flags found by meaning — the
// variable a chain's last call binds (…Bool()) or a chained BoolVar(&v)
// binds, the Value a chain or a literal registers, a literal's Destination
// and Action, a by-name accessor of the flag's library (not its Set, its
// HasName, nor a subcommand look-up), a flags struct's field (not a
// write). An environment variable a flag reads is read where the flag is.
func TestPackage_ReadsByMeaning(t *testing.T) {
	l := MustLoader(t, false)
	pkg := MustPackage(t, MustLoad(t, l, "flags.txtar", "general.go"), "general.go")
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"--trace", []string{"variable:general.go:21"}},
		{"APP_TRACE", []string{"variable:general.go:21"}},
		{"--quiet", []string{"variable:general.go:21"}},
		{"--level", []string{"setter:general.go:28"}},
		{"--verbose", []string{"variable:literal.go:26", "by_name:literal.go:26"}},
		{"APP_VERBOSE", []string{"variable:literal.go:26", "by_name:literal.go:26"}},
		{"--mode", []string{"setter:general.go:28", "setter:literal.go:14"}},
		{"--out", []string{"variable:tags.go:43"}},
		{"APP_OUT", []string{"variable:tags.go:43"}},
		{"--dry-run", nil}, // written only
		{"APP_HOME", []string{"variable:tags.go:43"}},
	} {
		defs, _ := pkg.FindOption(tc.name, DefFlag, DefEnv)
		if len(defs) == 0 {
			t.Fatalf("%s: no definition", tc.name)
		}
		var got []string
		for _, r := range pkg.Reads(tc.name, defs) {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.File, r.Line))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Reads(%s) (-want +got)\n%s", tc.name, diff)
		}
	}
}

// TestPackage_ReadsThroughNames: a look-up by one of a flag's names taken
// from its definition — a loop over X.Names(), X.Names()[i], a variable
// holding them, a slice literal of the flag's names, a method value handed
// them (slices.ContainsFunc), with X the package variable the literal
// initializes or a copy or field set from it — reads the flag. A loop
// over another flag's names, over every flag's, over names split at run
// time or over a variable that may hold another flag reads none; Set
// writes.
func TestPackage_ReadsThroughNames(t *testing.T) {
	l := MustLoader(t, false)
	pkg := MustPackage(t, MustLoad(t, l, "names.txtar", "names.go"), "names.go")
	at := func(text string) string {
		t.Helper()
		return "by_name:names.go:" + fmt.Sprint(fixtureLine(t, "names.txtar", "names.go", text))
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"--help", []string{at("read: a loop over the definition's names"), at("read: a name by index"),
			at("read: a variable holding the names"), at("read: a slice literal of the flag's names"), at("read: a field set from a copy")}},
		{"-h", []string{at("read: a loop over the definition's names"), at("read: a name by index"),
			at("read: a variable holding the names"), at("read: a slice literal of the flag's names"), at("read: a field set from a copy")}},
		{"--version", []string{at("another flag's names")}},
	} {
		defs, _ := pkg.FindOption(tc.name, DefFlag)
		if len(defs) == 0 {
			t.Fatalf("%s: no definition", tc.name)
		}
		var got []string
		for _, r := range pkg.Reads(tc.name, defs) {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.File, r.Line))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Reads(%s) (-want +got)\n%s", tc.name, diff)
		}
	}
}

// fixtureLine is the 1-based line of file in testdata/fixture holding
// text: the oracle is the fixture's text.
func fixtureLine(tb testing.TB, fixture, file, text string) int {
	tb.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", fixture))
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name != file {
			continue
		}
		for i, line := range strings.Split(string(f.Data), "\n") {
			if strings.Contains(line, text) {
				return i + 1
			}
		}
	}
	tb.Fatalf("%s: %s holds no line with %q", fixture, file, text)
	return 0
}
