package product

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkFirstAskAfterRefresh times the first ask of a need after the
// source changed and a refresh (on an engine of its own, as beside a
// server) re-proved its evidence: the serving engine's path from a changed
// evidence generation to an exact hit, next to BenchmarkNeedContextExact.
// Each iteration moves the cited lines one line further down (outside the
// timer), refreshes, and asks the need in a new session; "warmed" lets the
// serving engine Warm after the refresh (outside the timer) first.
func BenchmarkFirstAskAfterRefresh(b *testing.B) {
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "asked", true: "warmed"}[warm], func(b *testing.B) { benchmarkFirstAsk(b, warm) })
	}
}

func benchmarkFirstAsk(b *testing.B, warm bool) {
	repo := MustFixtureRepo(b, "grepx", true)
	te := MustEngine(b, repo)
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	kindOf(b, te.need(needTraceCRLF), resolutionComposite)
	refresher, err := Open(context.Background(), Config{DataDir: te.data, Repository: repo, Tests: MustTestsConfig(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer refresher.Close()
	req, err := DecodeNeedRequest([]byte(needTraceCRLF))
	if err != nil {
		b.Fatal(err)
	}
	flags := filepath.Join(repo, "flags.go")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		editFile(b, flags, "import \"flag\"\n", fmt.Sprintf("import \"flag\"\n\nconst shift%d = 0\n", i))
		if rep, err := refresher.Refresh(context.Background()); err != nil || rep.Renewed != 1 {
			b.Fatalf("refresh %+v: %v", rep, err)
		}
		if warm {
			if n, err := te.Warm(context.Background()); err != nil || n != 1 {
				b.Fatalf("Warm: %d, %v", n, err)
			}
		}
		b.StartTimer()
		r, err := te.NeedContext(context.Background(), fmt.Sprintf("bench-%d", i), req)
		if err != nil || r.Resolution.Kind != ResolutionExact || r.Replays != 0 {
			b.Fatalf("first ask after the refresh: %s, %d replays, %v", r.Resolution.Kind, r.Replays, err)
		}
	}
}
