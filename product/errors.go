package product

import (
	"context"
	"errors"
	"fmt"

	"github.com/needle-dev/needle/product/internal/jsonrpc"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Kind classifies an Error. The enum is append-only: values are never
// renumbered or reused, because they are mapped to exit codes and JSON-RPC
// codes by one table, kinds.
type Kind int

const (
	kindOther        Kind = iota // unclassified failure; clients see "internal error"
	KindInvalidInput             // untrusted input violates the need contract
	kindNotFound                 // a named thing does not exist
	kindStore                    // the SQLite store failed or refused to open
	kindMigration                // the applied schema does not match this binary
	kindIO                       // reading or writing a local file failed
	kindConflict                 // the request conflicts with the state of what it names
	kindUnavailable              // what the request needs is not configured (no worker)
	kindIntegrity                // a stored record does not match its content address
)

// kindInfo is how every surface reports an error of one Kind.
type kindInfo struct {
	name string
	// exit is the needle command's exit status: invalid input is 2, like a
	// usage error; a stored record that fails its content address is 5;
	// everything else is 1 (needle change gives a conflict a code of its
	// own: changeExitCode).
	exit int
	// rpc is the JSON-RPC error code an MCP tool call answers with; 0 means
	// the call answers a tool result with isError instead.
	rpc int
	// public: the tool result (or HTTP error body) shows the error's
	// message; otherwise it says only "internal error" and the details go
	// to the log.
	public bool
	// http is the status of an /api/v1 error answer, api the error kind
	// its body names (web.ErrorDetail.Kind).
	http int
	api  string
}

// kinds is the one table of what each Kind means to a client.
var kinds = [...]kindInfo{
	kindOther:        {"other", 1, 0, false, 500, "internal"},
	KindInvalidInput: {"invalid input", 2, jsonrpc.CodeInvalidParams, true, 400, "invalid_input"},
	kindNotFound:     {"not found", 1, jsonrpc.CodeInvalidParams, true, 404, "not_found"},
	kindStore:        {"store", 1, 0, false, 500, "internal"},
	kindMigration:    {"migration", 1, 0, false, 500, "internal"},
	kindIO:           {"io", 1, 0, false, 500, "internal"},
	kindConflict:     {"conflict", 1, 0, true, 409, "conflict"},
	kindUnavailable:  {"unavailable", 1, 0, true, 503, "unavailable"},
	// The message names the record and what does not check; it holds ids
	// and digests only, so it is shown.
	kindIntegrity: {"integrity", 5, 0, true, 500, "integrity"},
}

func (k Kind) info() kindInfo {
	if k >= 0 && int(k) < len(kinds) {
		return kinds[k]
	}
	return kindInfo{name: fmt.Sprintf("kind(%d)", int(k)), exit: 1, http: 500, api: "internal"}
}

func (k Kind) String() string { return k.info().name }

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

// integrityf builds a kindIntegrity error: record (a patch, a blob, an
// artifact, a lifecycle: named by its id) does not match the content
// address it is bound to. Nothing that reads it may act on it.
func integrityf(op, record, format string, args ...any) *Error {
	return &Error{Op: op, Kind: kindIntegrity, Err: fmt.Errorf("integrity: %s does not check: %s", record, fmt.Sprintf(format, args...))}
}

// KindOf reports the Kind of err, or kindOther when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return kindOther
}

// userMessage is how a failure reads to a person at the product's edge (the
// command's stderr): a git failure as what git said about the repository,
// since the command line and exit status Needle ran it with mean nothing to
// the user (they stay in err for logs); anything else as its own message.
func userMessage(err error) string {
	var ge *snapshot.GitError
	if errors.As(err, &ge) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("git failed on the repository %s: %s", ge.Dir, ge.Reason())
	}
	return err.Error()
}

// exitCodeOf is the needle command's exit status for err.
func exitCodeOf(err error) int { return KindOf(err).info().exit }
