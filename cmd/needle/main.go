// Command needle is the Needle CLI; see product.Main.
package main

import (
	"context"
	"os"
	"syscall"

	"github.com/needle-dev/needle/product"
)

func main() {
	// Interrupt and terminate end the context with cause product.ErrShutdown,
	// so workers are interrupted and checkouts cleaned up, and a server
	// exits 0: a requested stop is not a failure.
	ctx, stop := product.ShutdownContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := product.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
