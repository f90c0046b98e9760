// Package bench is needlebench, the benchmark-and-replay harness. It drives
// the product only through its public API and binaries: it points the
// product's App Server command at a replay server and gives it a fresh data
// directory, and changes nothing else (DESIGN.md §9).
//
// This first version only identifies itself; corpus replay, the replay App
// Server, the fake model and the recorder arrive with their issues.
package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/needle-dev/needle/product"
)

const usage = `needlebench is Needle's benchmark-and-replay harness.

Usage:
  needlebench <command> [arguments]

Commands:
  version           print the harness version and the product it drives
  help              print this help

Exit status: 0 success, 1 failure, 2 usage error.
`

// Main is the needlebench command; it returns the process exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version":
		if len(args) != 1 {
			fmt.Fprintln(stderr, "needlebench version: takes no arguments")
			return 2
		}
		fmt.Fprintf(stdout, "needlebench %s\nproduct definition %s\n", product.Version(), product.DefinitionID())
		return 0
	}
	fmt.Fprintf(stderr, "needlebench: unknown command %q\n\n%s", args[0], usage)
	return 2
}
