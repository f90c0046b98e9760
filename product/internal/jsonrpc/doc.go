// Package jsonrpc is a JSON-RPC 2.0 server over newline-delimited lines
// (an MCP stdio transport). It knows nothing about the methods it serves:
// the caller supplies a method table, and this package owns framing,
// validation, session gating, request ids, scheduling and cancellation.
//
// # Framing
//
// Every message is one line holding one JSON object; blank lines are
// skipped. Lines are read with the bounded reader of product/internal/ndjson
// (Options.MaxLine), not a bufio.Scanner: an over-long line is answered with -32600 (id null) and
// discarded up to its newline, so the stream stays in step and the server
// stays up. Every write is one compact JSON object plus "\n", encoded in full
// before a single Write (ndjson.Writer), so responses and Notify calls never
// interleave and out carries protocol only; diagnostics go to Options.Log.
//
// # Validation
//
// A line that is not JSON gets -32700 (id null). JSON that is not a request
// object gets -32600 with the request's id if it is a string or number,
// otherwise null: a batch (MCP 2025-06-18 removed batching), a scalar, a
// wrong "jsonrpc", a missing or non-string method, an id of another type
// (null included: MCP forbids it), params that are neither object nor array.
// Objects with an id and result or error but no method are responses from
// the client; the server sends no requests, so they are logged and dropped.
// Keys are matched exactly (the decoder's case folding is not used).
//
// # Sessions and ids
//
// Until the Options.InitMethod handler has returned successfully, requests
// for methods without Method.BeforeInit get -32600 "not initialized" and such
// notifications are dropped; a second InitMethod request, while the first
// runs or after it succeeded, gets -32600 "already initialized". The session
// is marked initialized before the init response is written, so a client
// that pipelines its next request behind the response is never refused.
//
// Request ids may not repeat within a session, in flight or not: every
// accepted id is remembered by a canonical key (a string by its decoded
// value, a number by its exact text, so 1 and 1.0 differ) and a repeat gets
// -32600 "duplicate request id" without running anything. The id is echoed
// back exactly as sent.
//
// # Scheduling
//
// Requests of Serialized methods wait in one FIFO queue served by a single
// worker goroutine, so they run one at a time in arrival order; all other
// methods run on their own goroutine at once, which keeps ping and the like
// responsive while a long serialized request runs. A handler that panics
// is answered with -32603 and the panic is logged; the server stays up.
//
// A handler that must know whether its answer reached the client (to
// record only what was really answered) registers a callback with
// OnAnswered; it runs right after the response was written, or failed to
// be, before the next serialized request starts and before Serve returns.
//
// # Cancellation and shutdown
//
// Each request's context is cancelled by the Options.CancelMethod
// notification naming its id, and by the end of Serve. A running handler
// still decides its own response; a context.Canceled error from a cancelled
// handler is sent as -32800 "request cancelled". A queued serialized request
// that is cancelled is answered -32800 at once and never runs. Cancelling an
// unknown or finished id, or the init request (MCP forbids it), is ignored.
//
// At EOF on in (or when Serve's context ends) the server stops accepting
// lines, answers queued requests -32800, cancels running handlers and waits
// for them; their responses are still written. Only then does Serve return,
// and nothing is written to out afterwards. When ctx ends, a reader blocked
// in in.Read cannot be interrupted: it exits when the caller closes in, and
// whatever it reads meanwhile is discarded.
package jsonrpc
