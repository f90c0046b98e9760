package lifecycle

import (
	"fmt"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/safetext"
)

// Bounds the machine shares with a change request. The product's MCP
// contract advertises the same numbers (its constants are these).
const (
	// MaxCriteria bounds the acceptance criteria (at least one).
	MaxCriteria = 8
	// MaxPatchFiles bounds the files one patch may touch; MaxPatchBytes
	// bounds the new content of one patch.
	MaxPatchFiles = 16
	MaxPatchBytes = 256 << 10
	// MaxPathChars bounds one path a patch or a scope names (code points).
	MaxPathChars = 512
)

// ChangeIDPattern is the syntax of an opaque change id.
var ChangeIDPattern = lazyregexp.New(`^chg_[0-9a-f]{24}$`)

// ProfileIDPattern is the syntax of a role profile's id.
var ProfileIDPattern = lazyregexp.New(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckPath accepts a file path a patch may write by the repository-path
// rule (safetext: clean, relative, slash-separated, no control, format or
// separator character, no component that is .git on any file system),
// bounded to MaxPathChars.
func CheckPath(p string) error {
	switch n := utf8.RuneCountInString(p); {
	case n > MaxPathChars:
		return fmt.Errorf("path too long (%d characters); the limit is %d", n, MaxPathChars)
	case p == ".":
		return fmt.Errorf(`"." can only be a subtree scope`)
	}
	return safetext.CheckRepoPath(p)
}

// InvalidError is a malformed event or state: Op names what was decoded,
// Path the offending field ("" for the whole value), Err the cause.
type InvalidError struct {
	Op   string
	Path string
	Err  error
}

func (e *InvalidError) Error() string {
	msg := e.Op
	if e.Path != "" {
		msg += ": " + e.Path
	}
	return msg + ": " + e.Err.Error()
}

func (e *InvalidError) Unwrap() error { return e.Err }

func invalidf(op, path, format string, args ...any) *InvalidError {
	return &InvalidError{Op: op, Path: path, Err: fmt.Errorf(format, args...)}
}
