package typecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Real third-party modules, fetched through the module proxy and pinned by
// their go.sum hashes (never committed). cobra v1.9.1 replaced the "help"
// literal of v1.8.1 with the constant helpFlagName; urfave/cli v2.27.7
// reads --help only through HelpFlag.Names(), v2.25.7 by name as well; v3
// writes its flags through aliases of a generic FlagBase.
var realModules = map[string]string{
	"github.com/spf13/cobra@v1.8.1":           "h1:e5/vxKd/rZsfSJMUX1agtjeTDf+qv1/JdBF8gg5k9ZM=",
	"github.com/spf13/cobra@v1.9.1":           "h1:CXSaggrXdbHK9CF+8ywj8Amf7PBRmPCOJugH954Nnlo=",
	"github.com/spf13/pflag@v1.0.5":           "h1:iy+VFUOCP1a+8yFto/drg2CJ5u0yRoB7fZw3DKv/JXA=",
	"github.com/spf13/pflag@v1.0.6":           "h1:jFzHGLGAlb3ruxLB8MhbI6A8+AQX/2eW4qeyNZXNp2o=",
	"github.com/urfave/cli/v2@v2.25.7":        "h1:VAzn5oq403l5pHjc4OhD54+XGO9cdKVL/7lDjF+iKUs=",
	"github.com/urfave/cli/v2@v2.27.7":        "h1:bH59vdhbjLv3LAvIu6gd0usJHgoTTPhCFib8qqOwXYU=",
	"github.com/urfave/cli/v3@v3.14.0":        "h1:a8414NQlHJs0c/iBsulKLzlES0n/lEAskbL2LKpU4/s=",
	"github.com/alecthomas/kingpin/v2@v2.4.0": "h1:f48lwail6p8zpO1bC4TxtqACaGqHYA22qkHjHpqDjYY=",
	"github.com/alecthomas/kong@v1.17.0":      "h1:f52BVWChYMDkMkCoqkEWRuFOk/K4B5LO7xIijeLJRdk=",
	"github.com/jessevdk/go-flags@v1.6.1":     "h1:Cvu5U8UGrLay1rZfv/zP7iLpSHGUZ/Ou68T0iX1bBK4=",
}

// MustModuleDownload downloads module@version into the module cache and
// checks its hash against the pin; it returns the module's directory.
func MustModuleDownload(tb testing.TB, modVersion string) string {
	tb.Helper()
	sum, ok := realModules[modVersion]
	if !ok {
		tb.Fatalf("%s is not pinned", modVersion)
	}
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = tb.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); err == nil && jerr != nil {
		err = jerr
	}
	if err != nil || info.Error != "" {
		tb.Fatalf("go mod download %s: %v %s\n%s", modVersion, err, info.Error, stderr.Bytes())
	}
	if info.Sum != sum {
		tb.Fatalf("%s: hash %s, pinned %s", modVersion, info.Sum, sum)
	}
	return info.Dir
}

// MustCopyDir copies a module directory (read-only in the cache) into a
// writable temporary one.
func MustCopyDir(tb testing.TB, from string) string {
	tb.Helper()
	to := tb.TempDir()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		return errors2(err, out.Close())
	})
	if err != nil {
		tb.Fatal(err)
	}
	return to
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestRealCobra_HelpFlag finds the definition of --help in two real cobra
// releases: a literal in v1.8.1, the constant helpFlagName in v1.9.1. The
// many other "help" strings of command.go (the help subcommand's name,
// template text, Lookup("help"), GetBool("help")) are uses. Its tests
// define --help flags of their own: those are definitions too, in test
// files.
func TestRealCobra_HelpFlag(t *testing.T) {
	MustModuleDownload(t, "github.com/spf13/pflag@v1.0.5")
	MustModuleDownload(t, "github.com/spf13/pflag@v1.0.6")
	l := MustLoader(t, true)
	for _, tc := range []struct {
		mod      string
		line     int
		from     NameFrom
		constant string
	}{
		{"github.com/spf13/cobra@v1.8.1", 1198, FromLiteral, ""},
		{"github.com/spf13/cobra@v1.9.1", 1229, FromConstant, "helpFlagName"},
	} {
		t.Run(tc.mod, func(t *testing.T) {
			dir := MustModuleDownload(t, tc.mod)
			prog, err := l.Load(context.Background(), MustSource(t, dir), "command.go")
			if err != nil {
				t.Fatal(err)
			}
			pkg := MustPackage(t, prog, "command.go")
			if len(pkg.Missing) != 0 {
				t.Fatalf("missing %v", pkg.Missing)
			}
			for _, name := range []string{"--help", "-h", "help"} {
				all, maybe := pkg.FindOption(name, DefFlag)
				var defs, inTests []Definition
				for _, d := range all {
					if strings.HasSuffix(d.File, "_test.go") {
						inTests = append(inTests, d)
					} else {
						defs = append(defs, d)
					}
				}
				if len(defs) != 1 || len(maybe) != 0 || len(inTests) < 2 {
					t.Fatalf("FindOption(%s) = %+v, undecided %+v; want one definition outside tests, some in tests", name, defsOf(all), maybe)
				}
				d := defs[0]
				if d.File != "command.go" || d.Line != tc.line || d.From != tc.from || d.Constant != tc.constant ||
					d.Long != "help" || d.Short != "h" || d.Callee != "(*github.com/spf13/pflag.FlagSet).BoolP" {
					t.Errorf("FindOption(%s) = %+v", name, d)
				}
			}
			// The version flag is defined too, and nothing defines --usage.
			if defs, _ := pkg.FindOption("--version", DefFlag); len(defs) == 0 {
				t.Error("no definition of --version")
			}
			if defs, _ := pkg.FindOption("--usage", DefFlag); len(defs) != 0 {
				t.Errorf("--usage defined at %+v", defsOf(defs))
			}
			// Command.Flag is the method, whatever pflag's Flag type is.
			d, err := pkg.Lookup("Command.Flag")
			if err != nil || d.Kind != DeclMethod || d.File != "command.go" {
				t.Fatalf("Lookup(Command.Flag) = %+v, %v", d, err)
			}
		})
	}
}

// TestBuildList_MatchesGoList compares the loader's module selection and
// file selection with the go command's on real cobra: an unpruned go 1.15
// module graph (v1.8.1), resolved by minimal version selection.
func TestBuildList_MatchesGoList(t *testing.T) {
	dir := MustCopyDir(t, MustModuleDownload(t, "github.com/spf13/cobra@v1.8.1"))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	run("mod", "download", "-x", "all")
	wantMods := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(run("list", "-m", "-json", "all")))
	for dec.More() {
		var m struct {
			Path, Version string
			Main          bool
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if !m.Main {
			wantMods[m.Path] = m.Version
		}
	}
	src := MustSource(t, dir)
	bl, err := readBuildList(src, ".", MustGoEnv(t)["GOMODCACHE"])
	if err != nil {
		t.Fatal(err)
	}
	gotMods := map[string]string{}
	for p, m := range bl.mods {
		gotMods[p] = m.version
	}
	if len(gotMods) == 0 || !mapsEqual(gotMods, wantMods) {
		t.Errorf("build list:\n got %v\nwant %v", gotMods, wantMods)
	}

	// Every package of the closure has the files go list selects.
	l := MustNewLoader(t, true)
	prog, err := l.Load(context.Background(), src, "command.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.Missing) != 0 {
		t.Fatalf("missing %v", prog.Missing)
	}
	dec = json.NewDecoder(bytes.NewReader(run("list", "-deps", "-json=ImportPath,Dir,GoFiles", ".")))
	compared := 0
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.ImportPath == "github.com/spf13/cobra" || p.ImportPath == "unsafe" {
			continue // the root, checked with its tests; unsafe has no files
		}
		dl := l.listing[p.Dir]
		if dl == nil {
			t.Errorf("%s (%s) was not loaded", p.ImportPath, p.Dir)
			continue
		}
		if !slices.Equal(dl.names, p.GoFiles) {
			t.Errorf("%s: files %v, go list %v", p.ImportPath, dl.names, p.GoFiles)
		}
		compared++
	}
	if compared < 20 {
		t.Errorf("compared %d packages; want the whole closure", compared)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
