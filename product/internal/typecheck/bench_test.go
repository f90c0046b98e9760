package typecheck

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The benchmarks type-check real cobra v1.9.1 (a mid-size package: 14
// files and 11 test files, 15,010 lines, with the standard library and
// pflag below it) the way the validators will.

// BenchmarkLoad_Cold: a new Loader per load — what a one-shot command pays.
func BenchmarkLoad_Cold(b *testing.B) {
	src := benchCobra(b)
	for b.Loop() {
		l := MustNewLoader(b, true)
		if _, err := l.Load(context.Background(), src, "command.go"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad_Warm: the same files again on a long-lived Loader — a proof
// replay when nothing the check read has changed.
func BenchmarkLoad_Warm(b *testing.B) {
	src := benchCobra(b)
	l := MustNewLoader(b, true)
	if _, err := l.Load(context.Background(), src, "command.go"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Load(context.Background(), src, "command.go"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad_Edited: one file of the package changes before every load —
// the package is checked again, its dependencies come from the cache.
func BenchmarkLoad_Edited(b *testing.B) {
	dir := MustCopyDir(b, MustModuleDownload(b, "github.com/spf13/cobra@v1.9.1"))
	src := MustSource(b, dir)
	l := MustNewLoader(b, true)
	if _, err := l.Load(context.Background(), src, "command.go"); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "args.go")
	orig, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if err := os.WriteFile(path, append(orig, []byte("\n// edit "+strconv.Itoa(i)+"\n")...), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Load(context.Background(), src, "command.go"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCobra(b *testing.B) Source {
	MustModuleDownload(b, "github.com/spf13/pflag@v1.0.6")
	return MustSource(b, MustModuleDownload(b, "github.com/spf13/cobra@v1.9.1"))
}
