package appserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// JSON-RPC error codes the server uses or that this client sends.
const (
	CodeInvalidRequest = -32600 // also the server's code for unknown methods and steer preconditions
	CodeMethodNotFound = -32601 // this client's answer to server requests nobody handles
	CodeInternalError  = -32603
	CodeOverloaded     = -32001 // server ingress saturated; retry with backoff
)

// RPCError is a JSON-RPC error object: the body of an error response from
// the server, or a RequestHandler's refusal of a server request.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("appserver: rpc error %d: %s", e.Code, e.Message)
}

var (
	// ErrClosed is wrapped by every error caused by the connection ending:
	// the process exited, the client was closed or the stream broke.
	ErrClosed = errors.New("appserver: connection closed")

	// ErrLineTooLong means the server sent a line longer than
	// ProcSpec.MaxLine. It is fatal: the connection is torn down.
	ErrLineTooLong = errors.New("appserver: line exceeds limit")

	// ErrNoActiveTurn is turn/steer's answer when the thread has no running
	// turn, including the window between the turn/start response and
	// turn/started.
	ErrNoActiveTurn = errors.New("appserver: no active turn to steer")
)

// TurnMismatchError is turn/steer's answer when expectedTurnId is not the
// thread's active turn.
type TurnMismatchError struct {
	Expected, Actual string
}

func (e *TurnMismatchError) Error() string {
	return fmt.Sprintf("appserver: expected active turn %q but found %q", e.Expected, e.Actual)
}

// NotSteerableError means the active turn takes no input (a "compact" or
// "review" turn): wait for it to finish, then start a new turn.
type NotSteerableError struct {
	TurnKind string
}

func (e *NotSteerableError) Error() string {
	return fmt.Sprintf("appserver: active %s turn is not steerable", e.TurnKind)
}

// The server reports these conditions only in prose, so the messages
// observed from 0.171.0 are the contract.
var (
	mismatchMessage = lazyregexp.New("^expected active turn id `([^`]*)` but found `([^`]*)`$")
	// turn/start against a non-steerable turn fails with the Rust Debug form.
	startNotSteerable = lazyregexp.New(`ActiveTurnNotSteerable \{ turn_kind: (\w+) \}`)
)

const noActiveTurnMessage = "no active turn to steer"

// steerError maps a turn/steer error reply to the typed errors.
func steerError(err error) error {
	var rpc *RPCError
	if !errors.As(err, &rpc) {
		return err
	}
	if kind, ok := notSteerableKind(rpc.Data); ok {
		return &NotSteerableError{TurnKind: kind}
	}
	if rpc.Message == noActiveTurnMessage {
		return ErrNoActiveTurn
	}
	if m := mismatchMessage.FindStringSubmatch(rpc.Message); m != nil {
		return &TurnMismatchError{Expected: m[1], Actual: m[2]}
	}
	return err
}

// startError maps a turn/start error reply: the merge-into-active-turn path
// can fail because the active turn is not steerable.
func startError(err error) error {
	var rpc *RPCError
	if !errors.As(err, &rpc) {
		return err
	}
	if kind, ok := notSteerableKind(rpc.Data); ok {
		return &NotSteerableError{TurnKind: kind}
	}
	if m := startNotSteerable.FindStringSubmatch(rpc.Message); m != nil {
		return &NotSteerableError{TurnKind: lowerFirst(m[1])}
	}
	return err
}

// notSteerableKind reads data.codexErrorInfo.activeTurnNotSteerable.turnKind.
// codexErrorInfo is sometimes a bare string ("other"), which is not a match.
func notSteerableKind(data json.RawMessage) (string, bool) {
	var d struct {
		CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
	}
	if len(data) == 0 || json.Unmarshal(data, &d) != nil {
		return "", false
	}
	var info struct {
		ActiveTurnNotSteerable *struct {
			TurnKind string `json:"turnKind"`
		} `json:"activeTurnNotSteerable"`
	}
	if json.Unmarshal(d.CodexErrorInfo, &info) != nil || info.ActiveTurnNotSteerable == nil {
		return "", false
	}
	return info.ActiveTurnNotSteerable.TurnKind, true
}

// lowerFirst turns a Rust variant name (Compact) into the wire's camelCase
// (compact).
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// closedError is the error pending work fails with when the connection ends.
func closedError(cause error) error {
	switch {
	case cause == nil:
		return ErrClosed
	case errors.Is(cause, ErrClosed):
		return cause
	default:
		return fmt.Errorf("%w: %w", ErrClosed, cause)
	}
}
