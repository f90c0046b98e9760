package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product"
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

// thirdPartyCase is one certified symbol and what must become of it.
type thirdPartyCase struct {
	name     string // "Name" or "Type.Method"
	old      span   // the declaration in the old version
	intact   bool
	newStart int // where the same lines are in the new version, if intact
	newEnd   int
}

// TestProduct_RealModuleAcrossVersions certifies, through the product's
// public API, the location of exported functions and methods of a real
// module at one release, bumps the repository to the next release, and
// checks what a cache-only engine serves: the evidence again, at the lines
// where it now is, for every symbol whose cited code is intact, and nothing
// for the others.
//
// The ground truth is the harness's own, not the product's: the
// declarations come from go/types (program.go), and a citation is intact
// when its exact lines occur exactly once in the new version of the same
// file.
func TestProduct_RealModuleAcrossVersions(t *testing.T) {
	ctx := context.Background()
	oldTree, newTree := mustModuleTree(t, thirdPartyOld), mustModuleTree(t, thirdPartyNew)

	repo := filepath.Join(t.TempDir(), "go-cmp")
	mustGit(t, repo, "init", "-q")
	mustCommit(t, repo, oldTree, thirdPartyModule+" "+thirdPartyOld)

	src := filepath.Join(t.TempDir(), "src")
	if err := syncTree(src, oldTree); err != nil {
		t.Fatal(err)
	}
	// The type checker reads the module's dependencies from the module
	// cache only: fetch them first, as materialize does for a corpus.
	if err := downloadDeps(ctx, src); err != nil {
		t.Fatal(err)
	}
	prog, err := loadProgram(ctx, src, oldTree)
	if err != nil {
		t.Fatal(err)
	}
	var intact, changed []thirdPartyCase
	for name, ds := range prog.byName {
		if len(ds) != 1 || !ds[0].Exported || ds[0].End-ds[0].Start+1 > product.MaxSpanLines {
			continue
		}
		s := span{Path: ds[0].Path, Start: ds[0].Start, End: ds[0].End, Text: ds[0].Text}
		c := thirdPartyCase{name: name, old: s}
		c.newStart, c.newEnd, c.intact = findOnce(newTree[s.Path], s)
		if c.intact {
			intact = append(intact, c)
		} else {
			changed = append(changed, c)
		}
	}
	byPlace := func(a, b thirdPartyCase) int {
		if c := strings.Compare(a.old.Path, b.old.Path); c != 0 {
			return c
		}
		return a.old.Start - b.old.Start
	}
	slices.SortFunc(intact, byPlace)
	slices.SortFunc(changed, byPlace)
	t.Logf("%s %s: %d exported functions and methods with a unique name; %d intact in %s, %d changed or gone",
		thirdPartyModule, thirdPartyOld, len(intact)+len(changed), len(intact), thirdPartyNew, len(changed))
	intact, changed = spread(intact, thirdPartyPerCategory), spread(changed, thirdPartyPerCategory)
	if len(intact) < 3 || len(changed) < 3 {
		t.Fatalf("%s %s..%s exercises too little: %d intact, %d changed; want at least 3 of each",
			thirdPartyModule, thirdPartyOld, thirdPartyNew, len(intact), len(changed))
	}
	cases := slices.Concat(intact, changed)

	data := t.TempDir()
	eng := mustOpen(t, product.Config{DataDir: data, Repository: repo, Transport: "cli"})
	for _, c := range cases {
		p := fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":"symbol","name":%q},"path":%q,"start_line":%d,"end_line":%d}`,
			c.name, c.old.Path, c.old.Start, c.old.End)
		res, err := eng.Propose(ctx, []byte(p))
		if err != nil || res.Status != "certified" {
			t.Fatalf("propose %s: %+v %v", p, res, err)
		}
	}
	eng.Close()

	// The version bump: files gone in the new release are deleted, the rest
	// rewritten where they differ, as a checkout would.
	mustCommit(t, repo, newTree, thirdPartyModule+" "+thirdPartyNew)
	if out := mustGit(t, repo, "status", "--porcelain"); out != "" {
		t.Fatalf("work tree not clean after the bump:\n%s", out)
	}
	eng = mustOpen(t, product.Config{DataDir: data, Repository: repo, Transport: "cli", CacheOnly: true})
	defer eng.Close()

	var served, moved, refused int
	kinds := map[product.ResolutionKind]int{}
	for i, c := range cases {
		req, err := product.DecodeNeedRequest(fmt.Appendf(nil, `{"route":"locate.implementation","subject":{"kind":"symbol","name":%q}}`, c.name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := eng.NeedContext(ctx, fmt.Sprintf("drift-%d", i), req)
		if err != nil {
			t.Fatal(err)
		}
		got := locationCitations(r.Context, c.old.Path)
		kinds[r.Resolution.Kind]++
		hit := r.Resolution.Kind == product.ResolutionExact || r.Resolution.Kind == product.ResolutionCoverage
		if c.intact {
			want := []string{fmt.Sprintf("%d-%d", c.newStart, c.newEnd)}
			if !hit || r.Status != "hit" || r.WorkerSpawned || !slices.Equal(got, want) {
				t.Errorf("%s (%s, intact at %s:%d-%d): resolution %s, cites %s:%v, want a hit citing %s:%v\n%s",
					c.name, c.old, c.old.Path, c.newStart, c.newEnd, r.Resolution.Kind, c.old.Path, got, c.old.Path, want, r.Context)
				continue
			}
			served++
			if c.newStart != c.old.Start {
				moved++
			}
		} else {
			if hit || r.Status == "hit" || r.Status == "partial" || strings.Contains(r.Context, c.old.Path+":") {
				t.Errorf("%s (%s, changed or gone): resolution %s (%s), want no reuse\n%s",
					c.name, c.old, r.Resolution.Kind, r.Status, r.Context)
				continue
			}
			refused++
		}
	}
	t.Logf("certified %d symbols on %s; on %s served %d of %d intact (%d at moved lines), refused %d of %d changed; resolutions %v",
		len(cases), thirdPartyOld, thirdPartyNew, served, len(intact), moved, refused, len(changed), kinds)
}

// mustModuleTree downloads the module at version through the module proxy
// and reads its source.
func mustModuleTree(tb testing.TB, version string) tree {
	tb.Helper()
	d, err := moduleDownload(context.Background(), thirdPartyModule, version)
	if err != nil {
		tb.Fatal(err)
	}
	t, err := d.source()
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// mustGit runs git in dir (created if need be).
func mustGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// mustCommit makes the work tree at dir hold exactly t and commits it.
func mustCommit(tb testing.TB, dir string, t tree, msg string) {
	tb.Helper()
	if err := syncTree(dir, t); err != nil {
		tb.Fatal(err)
	}
	mustGit(tb, dir, "add", "-A")
	mustGit(tb, dir, "commit", "-qm", msg)
}

func mustOpen(tb testing.TB, cfg product.Config) *product.Engine {
	tb.Helper()
	e, err := product.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
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
