package product

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The third-party module the drift test runs on: two adjacent releases with
// real changes between them (the reporter rewritten, Diff and the diff
// algorithm edited, most of cmp untouched).
const (
	thirdPartyModule = "github.com/google/go-cmp"
	thirdPartyOld    = "v0.4.1"
	thirdPartyNew    = "v0.5.0"
	// thirdPartyPerCategory bounds the symbols taken from each ground-truth
	// category, so that at most 40 symbols are certified.
	thirdPartyPerCategory = 20
)

// TestNeedContext_RealModuleAcrossVersions certifies the location of
// exported functions and methods of a real module at one release, bumps the
// repository to the next release, and checks what a cache-only engine serves:
// the evidence again, at the lines where it now is, for every symbol whose
// cited code is intact, and nothing for the others.
//
// The ground truth is computed here, not by the product: a citation is intact
// when its exact lines occur exactly once in the new version of the same file.
func TestNeedContext_RealModuleAcrossVersions(t *testing.T) {
	oldDir := MustModuleDownload(t, thirdPartyModule, thirdPartyOld)
	newDir := MustModuleDownload(t, thirdPartyModule, thirdPartyNew)
	oldFiles := MustModuleSources(t, oldDir)
	newFiles := MustModuleSources(t, newDir)

	repo := filepath.Join(t.TempDir(), "go-cmp")
	MustSyncTree(t, repo, nil, oldFiles)
	MustRun(t, repo, "git", "init", "-q")
	MustGitCommit(t, repo, thirdPartyModule+" "+thirdPartyOld)

	var intact, changed []thirdPartyCase
	for _, c := range MustExportedFuncs(t, oldFiles) {
		c.newStart, c.newEnd, c.intact = findOnce(newFiles[c.path], oldFiles[c.path], c.start, c.end)
		if c.intact {
			intact = append(intact, c)
		} else {
			changed = append(changed, c)
		}
	}
	t.Logf("%s %s: %d exported functions and methods with a unique name; %d intact in %s, %d changed or gone",
		thirdPartyModule, thirdPartyOld, len(intact)+len(changed), len(intact), thirdPartyNew, len(changed))
	intact, changed = spread(intact, thirdPartyPerCategory), spread(changed, thirdPartyPerCategory)
	if len(intact) < 3 || len(changed) < 3 {
		t.Fatalf("%s %s..%s exercises too little: %d intact, %d changed; want at least 3 of each",
			thirdPartyModule, thirdPartyOld, thirdPartyNew, len(intact), len(changed))
	}
	cases := slices.Concat(intact, changed)

	te := MustEngine(t, repo)
	for _, c := range cases {
		te.mustCertify(fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":"symbol","name":%q},"path":%q,"start_line":%d,"end_line":%d}`,
			c.name, c.path, c.start, c.end))
	}

	// The version bump: files gone in the new release are deleted, the rest
	// rewritten where they differ, as a checkout would.
	MustSyncTree(t, repo, oldFiles, newFiles)
	MustGitCommit(t, repo, thirdPartyModule+" "+thirdPartyNew)
	if out := MustRun(t, repo, "git", "status", "--porcelain"); out != "" {
		t.Fatalf("work tree not clean after the bump:\n%s", out)
	}
	te.reopen(func(c *Config) { c.CacheOnly = true })

	var served, moved, refused int
	kinds := map[ResolutionKind]int{}
	for _, c := range cases {
		r := te.need(fmt.Sprintf(`{"route":"locate.implementation","subject":{"kind":"symbol","name":%q}}`, c.name))
		got := locationCitations(r.Context, c.path)
		kinds[r.Resolution.Kind]++
		hit := r.Resolution.Kind == ResolutionExact || r.Resolution.Kind == ResolutionCoverage
		if c.intact {
			want := []string{fmt.Sprintf("%d-%d", c.newStart, c.newEnd)}
			if !hit || r.Status != "hit" || r.WorkerSpawned || !slices.Equal(got, want) {
				t.Errorf("%s (%s:%d-%d, intact at %s:%d-%d): resolution %s, cites %s:%v, want a hit citing %s:%v\n%s",
					c.name, c.path, c.start, c.end, c.path, c.newStart, c.newEnd, r.Resolution.Kind, c.path, got, c.path, want, r.Context)
				continue
			}
			served++
			if c.newStart != c.start {
				moved++
			}
		} else {
			if hit || r.Status == "hit" || r.Status == "partial" || strings.Contains(r.Context, c.path+":") {
				t.Errorf("%s (%s:%d-%d, changed or gone): resolution %s (%s), want no reuse\n%s",
					c.name, c.path, c.start, c.end, r.Resolution.Kind, r.Status, r.Context)
				continue
			}
			refused++
		}
	}
	t.Logf("certified %d symbols on %s; on %s served %d of %d intact (%d at moved lines), refused %d of %d changed; resolutions %v",
		len(cases), thirdPartyOld, thirdPartyNew, served, len(intact), moved, refused, len(changed), kinds)
}

// MustModuleDownload downloads module@version through the Go module proxy
// into the module cache and returns the directory holding its source. The
// command runs in an empty directory so that no main module is involved.
func MustModuleDownload(tb testing.TB, module, version string) string {
	tb.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = tb.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || info.Error != "" || info.Dir == "" {
		tb.Fatalf("go mod download %s@%s: %v %s\n%s%s", module, version, err, info.Error, out, stderr.Bytes())
	}
	return info.Dir
}

// MustModuleSources reads the .go files and go.mod under dir, keyed by
// slash-separated relative path.
func MustModuleSources(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") && rel != "go.mod" {
			return nil
		}
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no Go source in %s", dir)
	}
	return files
}

// MustSyncTree makes the files under root those of want: files of have that
// want lacks are deleted, and files of want written where they differ from
// have. Everything written is writable (the module cache is not).
func MustSyncTree(tb testing.TB, root string, have, want map[string][]byte) {
	tb.Helper()
	for rel := range have {
		if _, ok := want[rel]; !ok {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for rel, data := range want {
		if old, ok := have[rel]; ok && bytes.Equal(old, data) {
			continue
		}
		MustWriteFile(tb, filepath.Join(root, filepath.FromSlash(rel)), string(data))
	}
}

// MustGitCommit commits everything in the work tree at dir.
func MustGitCommit(tb testing.TB, dir, msg string) {
	tb.Helper()
	MustRun(tb, dir, "git", "add", "-A")
	MustRun(tb, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", msg)
}

// thirdPartyCase is one certified symbol and what must become of it.
type thirdPartyCase struct {
	name       string // "Name" or "Type.Method"
	path       string
	start, end int // the declaration in the old version
	intact     bool
	newStart   int // where the same lines are in the new version, if intact
	newEnd     int
}

// MustExportedFuncs returns the exported top-level functions and methods of
// the non-test files outside testdata, with the lines of their declarations
// (from the func keyword to the closing brace), sorted by path and line.
// A name declared more than once in the tree (the same function for two
// build tags, a method name shared by two packages) is left out: its
// subject would name two places.
func MustExportedFuncs(tb testing.TB, files map[string][]byte) []thirdPartyCase {
	tb.Helper()
	var all []thirdPartyCase
	count := map[string]int{}
	for rel, src := range files {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || slices.Contains(strings.Split(rel, "/"), "testdata") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			tb.Fatalf("%s does not parse: %v", rel, err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				name = receiverType(fd.Recv.List[0].Type) + "." + name
			}
			count[name]++
			if !fd.Name.IsExported() {
				continue
			}
			start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
			if end-start+1 > MaxSpanLines {
				continue
			}
			all = append(all, thirdPartyCase{name: name, path: rel, start: start, end: end})
		}
	}
	var out []thirdPartyCase
	for _, c := range all {
		if count[c.name] == 1 {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b thirdPartyCase) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.start - b.start
	})
	return out
}

// receiverType returns the type name of a method receiver: T for T, *T,
// T[P] and *T[P].
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return fmt.Sprintf("%T", x)
		}
	}
}

// findOnce looks for lines start..end of oldSrc among the lines of newSrc.
// ok is true when they occur there exactly once, at newStart..newEnd.
func findOnce(newSrc, oldSrc []byte, start, end int) (newStart, newEnd int, ok bool) {
	if newSrc == nil {
		return 0, 0, false
	}
	want := strings.Split(string(oldSrc), "\n")[start-1 : end]
	have := strings.Split(string(newSrc), "\n")
	found := 0
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			found++
			newStart, newEnd = i+1, i+len(want)
		}
	}
	if found != 1 {
		return 0, 0, false
	}
	return newStart, newEnd, true
}

// spread returns at most k of cases, evenly spaced, so that the symbols
// taken come from across the module rather than its first files.
func spread(cases []thirdPartyCase, k int) []thirdPartyCase {
	if len(cases) <= k {
		return cases
	}
	out := make([]thirdPartyCase, k)
	for i := range out {
		out[i] = cases[i*len(cases)/k]
	}
	return out
}

// locationCitations returns the line ranges ("12-30") the context cites in
// path.
func locationCitations(context, path string) []string {
	re := regexp.MustCompile(`(?m)(?:^|[\s(])` + regexp.QuoteMeta(path) + `:(\d+-\d+)\b`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(context, -1) {
		out = append(out, m[1])
	}
	return out
}
