//go:build linux

package product

import (
	"context"
	"fmt"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/typecheck"
)

// The benchmarks of this file isolate the costs of a proof replay (issue 13
// cause 5): the first ask after a version bump re-validates evidence whose
// files changed. validate parsed the whole package again for every test it
// checked, asked git whether each file it read was ignored in a
// subprocess of its own, and wrote each file's stat-cache entry in a
// transaction of its own. The fixes — type-check once per validation
// (typecheck.Loader keeps the checked package), one long-lived `git check-ignore --stdin` per unit of work,
// stat-cache writes batched — each show in its own benchmark and in
// BenchmarkReplay.

// replayPackage is a git repository holding a package lib with tests tests,
// five to a file, each reaching a function through a helper of its own:
// the first ones (at most maxReaching, the most a proposal may list) reach
// Target, the others Other — the shape of a real package whose test suite
// is larger than the tests that matter for one function.
type replayPackage struct {
	te       *testEngine
	proposal string // exhaustive focused_tests of Target
	files    []string
	reaching int
}

const maxReaching = 10

func mustReplayPackage(tb testing.TB, tests int) *replayPackage {
	tb.Helper()
	dir := MustFixtureRepo(tb, "grepx", false)
	rp := &replayPackage{}
	write := func(name, src string) {
		MustWriteFile(tb, filepath.Join(dir, filepath.FromSlash(name)), src)
		rp.files = append(rp.files, name)
	}
	write("lib/lib.go", "package lib\n\n// Target is what the tests reach.\nfunc Target(x int) int {\n\treturn x + 1\n}\n"+
		"\n// Other is what the other tests reach.\nfunc Other(x int) int {\n\treturn x + 1\n}\n")
	rp.reaching = min(tests, maxReaching)
	var refs []string
	for f := 0; f*5 < tests; f++ {
		var src strings.Builder
		src.WriteString("package lib\n\nimport \"testing\"\n")
		for i := f * 5; i < min(tests, f*5+5); i++ {
			callee := "Target"
			if i >= rp.reaching {
				callee = "Other"
			}
			fmt.Fprintf(&src, "\nfunc helper%03d(x int) int {\n\treturn %s(x) * %d\n}\n", i, callee, i+1)
			fmt.Fprintf(&src, "\nfunc TestTarget%03d(t *testing.T) {\n\tif helper%03d(1) != %d {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n", i, i, 2*(i+1))
			if i < rp.reaching {
				name := fmt.Sprintf("lib/t%02d_test.go", f)
				test := fmt.Sprintf("TestTarget%03d", i)
				refs = append(refs, fmt.Sprintf(`{"path":%q,"name":%q,"command":%q}`, name, test, TestCommand(name, test)))
			}
		}
		write(fmt.Sprintf("lib/t%02d_test.go", f), src.String())
	}
	MustRun(tb, dir, "git", "init", "-q")
	MustRun(tb, dir, "git", "add", "-A")
	MustRun(tb, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "lib")
	rp.te = MustEngine(tb, dir)
	rp.proposal = `{"kind":"focused_tests","subject":{"kind":"symbol","name":"Target"},"tests":[` + strings.Join(refs, ",") + `]}`
	return rp
}

// shift moves every line of every file of lib down by one, as an edit above
// the code does: the evidence's file dependencies change, its proof holds.
func (rp *replayPackage) shift(tb testing.TB) {
	tb.Helper()
	for _, f := range rp.files {
		p := filepath.Join(rp.te.Root(), filepath.FromSlash(f))
		src, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, append([]byte("// Edited above the code.\n"), src...), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

var replaySizes = []int{5, 20, 50}

// BenchmarkReplay replays the proof of focused_tests evidence (never
// exhaustive: it names tests the runs showed reach the subject)
// over a package of 5, 20 and 50 tests after every line of it moved: one op
// is one classify of the old evidence, which re-validates it and stores
// the replayed certificate (the same one each time after the first).
func BenchmarkReplay(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			rp := mustReplayPackage(b, n)
			res := rp.te.mustCertify(rp.proposal)
			ctx := context.Background()
			ev, err := rp.te.store.evidenceByCertificate(ctx, res.CertificateID)
			if err != nil {
				b.Fatal(err)
			}
			if !ev.Certificate.Satisfies.satisfies(obligation{Kind: capFocusedTests, Facets: facets{Selection: "representative"}}) {
				b.Fatalf("the evidence does not satisfy representative focused tests: %+v", ev.Certificate.Satisfies)
			}
			rp.shift(b)
			b.ReportAllocs()
			for b.Loop() {
				c, err := rp.te.classify(ctx, ev)
				if err != nil || c.State != stateReplayed {
					b.Fatalf("classify: %s, %v; want %s", c.State, err, stateReplayed)
				}
			}
		})
	}
}

// BenchmarkReaches asks, for every test of the package, whether a chain of
// resolved calls leads from it to Target, the way validate's static reach
// does (issue 13 cause 5): a question per test once parsed the whole
// package again. validate now type-checks a package once per validation,
// and the typecheck.Loader keeps the checked package under its files'
// digests, so one op is one Load answered from that cache plus the
// questions, linear in the tests.
func BenchmarkReaches(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			rp := mustReplayPackage(b, n)
			ctx := context.Background()
			e := rp.te.Engine
			loader, _, err := e.val.toolchain(ctx)
			if err != nil {
				b.Fatal(err)
			}
			root, err := os.OpenRoot(e.repo.Root())
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			src := &repoSource{repo: e.repo, root: root}
			test := rp.files[len(rp.files)-1]
			b.ReportAllocs()
			for b.Loop() {
				prog, err := loader.Load(ctx, src, rp.files...)
				if err != nil {
					b.Fatal(err)
				}
				pkg, err := prog.PackageOf(test)
				if err != nil {
					b.Fatal(err)
				}
				target, err := pkg.Lookup("Target")
				if err != nil {
					b.Fatal(err)
				}
				fn, _ := target.Object.(*types.Func)
				for i := range n {
					d, err := pkg.Lookup(fmt.Sprintf("TestTarget%03d", i))
					if err != nil {
						b.Fatal(err)
					}
					chain := prog.StaticPath(d.File, typecheck.Span{Start: d.Span.Start, End: d.Span.End}, fn, maxStaticDepth)
					if ok := chain != nil; ok != (i < rp.reaching) {
						b.Fatalf("TestTarget%03d reaches Target: %v; want %v", i, ok, i < rp.reaching)
					}
				}
			}
		})
	}
}

// BenchmarkIgnored asks, for every file a validation of the package reads,
// whether git ignores it (issue 13 cause 5): it was one `git check-ignore`
// process per file; now one long-lived check-ignore answers them all.
func BenchmarkIgnored(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			rp := mustReplayPackage(b, n)
			ctx := context.Background()
			b.ReportMetric(float64(len(rp.files)), "files/op")
			for b.Loop() {
				for _, f := range rp.files {
					if ignored, err := rp.te.Engine.repo.Ignored(ctx, f); err != nil || ignored {
						b.Fatalf("Ignored(%s) = %v, %v", f, ignored, err)
					}
				}
			}
		})
	}
}

// BenchmarkStatCachePut records the stat-cache entry of every file a
// validation of the package reads (issue 13 cause 5): it was one write
// transaction (and WAL fsync) per file; now Put keeps the entry in memory
// and the entries of a resolution are written in one transaction, which
// the accountant commits off the request path. One op is the Puts of a
// validation and that one write.
func BenchmarkStatCachePut(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			rp := mustReplayPackage(b, n)
			var entries []struct {
				path   string
				digest string
			}
			for _, f := range rp.files {
				_, digest, err := rp.te.Engine.repo.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				entries = append(entries, struct{ path, digest string }{f, digest})
			}
			cache, ctx := rp.te.stats, context.Background()
			b.ReportMetric(float64(len(entries)), "files/op")
			for b.Loop() {
				for _, en := range entries {
					e, ok := cache.Get(en.path)
					if !ok || e.Digest != en.digest {
						b.Fatalf("no stat cache entry for %s", en.path)
					}
					e.RecordedNs++
					cache.Put(en.path, e)
				}
				if err := rp.te.store.putAccounting(ctx, nil, nil, []*statRows{cache.takePending()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateTests validates the exhaustive test list of the package
// from scratch: the parse, ignore and stat-cache costs together, without
// storing anything.
func BenchmarkValidateTests(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			rp := mustReplayPackage(b, n)
			p, err := decodeProposal([]byte(rp.proposal))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				v, err := rp.te.Engine.val.validate(ctx, p)
				if err != nil || !v.Certified() || len(v.Dirs) != 1 || v.Dirs[path.Dir(rp.files[0])] == "" {
					b.Fatalf("validate: %v, %+v", err, v)
				}
			}
		})
	}
}
