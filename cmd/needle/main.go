// Command needle is the Needle CLI; see product.Main.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/needle-dev/needle/product"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := product.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
