// Command needle is the Needle CLI; see product.Main.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/needle-dev/needle/product"
)

func main() {
	// Interrupt and terminate cancel the context, so workers are
	// interrupted and checkouts cleaned up before the process exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := product.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
