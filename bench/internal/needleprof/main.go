// Command needleprof is needle with profiling around it: product.Main,
// unchanged, with a CPU profile written to $NEEDLEPROF_CPU and a runtime
// execution trace to $NEEDLEPROF_TRACE when it returns (either may be
// unset). needlebench experiment mcp-hit-latency --server-cpuprofile and
// --server-trace build it and serve the main run with it, so the product
// carries no profiling switch. The execution trace shows what a CPU
// profile cannot: time blocked in system calls (fsync) and subprocesses
// (go tool trace -pprof=syscall).
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/needle-dev/needle/product"
)

func main() {
	stop, err := start(os.Getenv("NEEDLEPROF_CPU"), os.Getenv("NEEDLEPROF_TRACE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "needleprof:", err)
		os.Exit(1)
	}
	code := product.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "needleprof:", err)
		code = 1
	}
	os.Exit(code)
}

// start starts the profiles asked for and returns what stops them.
func start(cpu, exec string) (func() error, error) {
	var files []*os.File
	stop := func() error {
		if cpu != "" {
			pprof.StopCPUProfile()
		}
		if exec != "" {
			trace.Stop()
		}
		var err error
		for _, f := range files {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		return err
	}
	for _, p := range []struct {
		file  string
		start func(*os.File) error
	}{{cpu, func(f *os.File) error { return pprof.StartCPUProfile(f) }}, {exec, func(f *os.File) error { return trace.Start(f) }}} {
		if p.file == "" {
			continue
		}
		f, err := os.Create(p.file)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if err := p.start(f); err != nil {
			return nil, err
		}
	}
	return stop, nil
}
