// Command needlebench is the Needle benchmark-and-replay harness; see bench.Main.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/needle-dev/needle/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
