//go:build !unix

package checkout

import (
	"context"
	"os"
)

// lockFile cannot lock f portably, so worktree commands are serialized only
// within this process. Needle runs on linux; this keeps the package
// building.
func lockFile(ctx context.Context, f *os.File) error { return nil }
