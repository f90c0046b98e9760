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
// A line must be JSON text (RFC 8259): valid UTF-8, no lone surrogate
// escapes, one value and nothing after it; otherwise -32700 (id null). One
// strict reader decides that (jsontext, of the json/v2 experiment) for the
// envelope and, through DecodeParams, for the params handlers decode. JSON
// that is not a request object gets -32600 with the request's id if it is a
// valid id, otherwise null: a batch (MCP 2025-06-18 removed batching), a
// scalar, a wrong "jsonrpc", a missing method or one that is not a JSON
// string ("method": null included), an invalid id, params that are neither
// object nor array, and a member named twice ("method":"ping","method":
// "tools/list" is refused, not read as either). Member names are matched
// exactly: no case or Unicode folding ("METHOD", "argumentſ" are other
// members). Objects with an id and result or error but no method are
// responses from the client; the server sends no requests, so they are
// logged and dropped.
//
// DecodeParams holds params to the same rule (exact names, no member twice
// at any level, types as declared; unknown members ignored) and answers
// -32602 otherwise.
//
// # Requests and notifications
//
// The method table says which methods are notifications (Method.
// Notification); all others are requests. A request method sent without an
// id does nothing: it is logged and dropped, because its outcome could
// never be answered (an "initialize" notification must not freeze a
// session, a "tools/call" notification must not spawn a worker). A
// notification method sent with an id gets -32600. The cancel notification
// is a notification whether or not the table lists it.
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
// The id rule: an id is a JSON string (valid Unicode, which the reader
// guarantees; identity is its value, so "a" and "\u0061" are one id) or a
// JSON number whose value is an integer within ±(2^53-1), the integers every
// JSON peer holds exactly (identity is the value, so 7, 7.0 and 70e-1 are
// one id, and so are 0 and -0). Anything else (null, a fraction, 1e400,
// 9007199254740993) is -32600 with id null. Request ids may not repeat
// within a session, in flight or not: every accepted id is remembered by
// its identity and a repeat gets -32600 "duplicate request id" without
// running anything. The id is echoed back exactly as sent (it is valid JSON
// and valid UTF-8 by then).
//
// # Scheduling
//
// Requests of Serialized methods wait in one FIFO queue served by a single
// worker goroutine, so they run one at a time in arrival order; all other
// methods run on their own goroutine at once, which keeps ping and the like
// responsive while a long serialized request runs. A handler that panics
// is answered with -32603 and the panic is logged; the server stays up.
//
// At most Options.MaxInFlight calls (default DefaultMaxInFlight, 64) are
// accepted and not yet finished — running, queued, or writing their
// answer. Past that a request is answered -32001 "server overloaded" (data
// {"maxInFlight": N}) without running anything, and a notification is
// dropped. The refusal is written by the reader goroutine itself, so a
// client that sends and never reads its answers blocks that write and the
// server stops reading its input: memory stays bounded by the limit, and
// the client's own writes stall (backpressure). The cancel notification
// is read as long as the reader is not blocked.
//
// A handler that must know whether its answer reached the client (to
// record only what was really answered) registers a callback with
// OnAnswered; it runs right after the response was written, or failed to
// be, before the next serialized request starts and before Serve returns.
//
// # Cancellation and shutdown
//
// Each request's context is cancelled by the Options.CancelMethod
// notification naming its id (its params decoded by DecodeParams, the id by
// the id rule), with cause ErrCancelledByClient, and by the end of Serve. A
// request the client cancelled is never answered: MCP says the receiver of
// a cancellation should not respond, so a queued one is dropped and never
// runs, and whatever a running one's handler returns (an error, or a result
// it made of what it had) is logged, not sent. A cancellation that arrives
// after the handler returned finds nothing in flight and changes nothing:
// that request is answered. Cancelling an unknown or finished id, or the
// init request (MCP forbids it), is ignored.
//
// At EOF on in (or when Serve's context ends) the server stops accepting
// lines, answers queued requests -32800, cancels running handlers and waits
// for them; their responses are still written (a context.Canceled error as
// -32800 "request cancelled": the server, not the client, gave up on
// them). Only then does Serve return, and nothing is written to out
// afterwards. When ctx ends, a reader blocked
// in in.Read cannot be interrupted: it exits when the caller closes in, and
// whatever it reads meanwhile is discarded.
package jsonrpc
