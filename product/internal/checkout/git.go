package checkout

import (
	"context"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// runGit runs git through the snapshot package's runner (scrubbed
// environment, hooks and fsmonitor off, own process group, capped output).
func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return snapshot.RunGit(ctx, dir, args...)
}

// splitNUL splits -z output into its records.
func splitNUL(out []byte) []string { return snapshot.SplitNUL(out) }
