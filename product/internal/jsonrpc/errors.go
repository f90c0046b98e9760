package jsonrpc

import (
	"context"
	"errors"
	"fmt"
)

// JSON-RPC error codes. CodeRequestCancelled is LSP's code for a request
// the client cancelled; MCP defines none of its own.
const (
	CodeParse            = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternal         = -32603
	CodeRequestCancelled = -32800
	// CodeOverloaded answers a request beyond Options.MaxInFlight, in the
	// range JSON-RPC reserves for server errors.
	CodeOverloaded = -32001
)

// Error is a JSON-RPC error object. A handler returns one (possibly
// wrapped) to send it to the client as is.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc: error %d: %s", e.Code, e.Message)
}

// ErrClosed is returned by Notify before Serve starts and after it returns.
var ErrClosed = errors.New("jsonrpc: server not serving")

// ErrCancelledByClient is the cause (context.Cause) of a handler's context
// that the client cancelled through Options.CancelMethod. Such a request is
// never answered, whatever its handler returns.
var ErrCancelledByClient = errors.New("jsonrpc: request cancelled by the client")

// The replies the transport itself makes. They are values, not shared
// pointers, so no reply can alias another.
func errParse() *Error { return &Error{Code: CodeParse, Message: "parse error"} }

func errInvalid(why string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + why}
}

func errLineTooLong(max int) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "request line too long", Data: map[string]int{"maxLineBytes": max}}
}

func errMethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "method not found", Data: map[string]string{"method": method}}
}

func errDuplicateID() *Error {
	return &Error{Code: CodeInvalidRequest, Message: "duplicate request id"}
}

func errNotInitialized() *Error {
	return &Error{Code: CodeInvalidRequest, Message: "not initialized"}
}

func errAlreadyInitialized() *Error {
	return &Error{Code: CodeInvalidRequest, Message: "already initialized"}
}

func errOverloaded(max int) *Error {
	return &Error{Code: CodeOverloaded, Message: "server overloaded: too many requests in flight", Data: map[string]int{"maxInFlight": max}}
}

func errCancelled() *Error {
	return &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
}

func errNotificationWithID(method string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + method + " is a notification and takes no id"}
}

// errInternal is all a client learns about a failure that is not an *Error:
// the detail may hold paths or other local state, so it goes to the log.
func errInternal() *Error { return &Error{Code: CodeInternal, Message: "internal error"} }

// replyError turns a handler's error into the error object to send, logging
// what the client does not see. ctxErr is the request context's state.
func (s *Server) replyError(method string, err, ctxErr error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ctxErr != nil && errors.Is(err, context.Canceled) {
		return errCancelled()
	}
	s.log.Printf("%s: %v", method, err)
	return errInternal()
}
