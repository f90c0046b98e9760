package product

import (
	"errors"
	"fmt"
)

// Kind classifies an Error. The enum is append-only: values are never
// renumbered or reused, because they are mapped to exit codes and (later)
// JSON-RPC codes and HTTP statuses by one table, exitCodes.
type Kind int

const (
	KindOther        Kind = iota // unclassified failure; clients see "internal error"
	KindInvalidInput             // untrusted input violates the need contract
	KindNotFound                 // a named thing does not exist
	KindStore                    // the SQLite store failed or refused to open
	KindMigration                // the applied schema does not match this binary
	KindIO                       // reading or writing a local file failed
	KindConflict                 // the request conflicts with the state of what it names
	KindUnavailable              // what the request needs is not configured (no worker)
)

var kindNames = [...]string{
	KindOther:        "other",
	KindInvalidInput: "invalid input",
	KindNotFound:     "not found",
	KindStore:        "store",
	KindMigration:    "migration",
	KindIO:           "io",
	KindConflict:     "conflict",
	KindUnavailable:  "unavailable",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the one error type of the product. Op names the operation that
// failed ("need.compile", "store.open"), Path the JSON path of the offending
// input for KindInvalidInput ("required[1].granularity"), and Err the cause.
type Error struct {
	Op   string
	Kind Kind
	Path string
	Err  error
}

func (e *Error) Error() string {
	msg := e.Op
	if e.Path != "" {
		msg += ": " + e.Path
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// invalidf builds a KindInvalidInput error for the JSON path path.
func invalidf(op, path, format string, args ...any) *Error {
	return &Error{Op: op, Kind: KindInvalidInput, Path: path, Err: fmt.Errorf(format, args...)}
}

// KindOf reports the Kind of err, or KindOther when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

// exitCodes maps an error Kind to the exit status of the needle command.
// Invalid input is 2 (like a usage error); everything else is 1.
var exitCodes = map[Kind]int{
	KindInvalidInput: 2,
}

func exitCodeOf(err error) int {
	if code, ok := exitCodes[KindOf(err)]; ok {
		return code
	}
	return 1
}
