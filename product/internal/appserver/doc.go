// Package appserver is a client for `codex app-server` speaking its stdio
// protocol (codex-cli 0.171.0, "JSON-RPC lite"). It knows nothing about what
// the turns are for: it spawns the process, frames messages, correlates
// requests, answers the server's requests through a caller-supplied handler
// and folds the notification stream into per-turn records.
//
// # Process
//
// Start runs ProcSpec.Command in its own process group with exactly
// ProcSpec.Env plus CODEX_HOME, stderr sent to a writer capped at 1 MiB.
// The server exits by itself when its stdin closes, so Close closes stdin,
// waits a grace period and only then SIGKILLs the whole group; Kill does so
// at once. After the process exits its group is killed too, so no stray
// grandchild keeps the pipes (or a sandboxed command) alive.
//
// # Framing
//
// Every message is one line of JSON. Writes are one json.Marshal plus '\n'
// under a write mutex (ndjson.Writer); the "jsonrpc" field is never sent.
// Reads use the bounded line reader of product/internal/ndjson with the
// limit ProcSpec.MaxLine: a longer line
// is a fatal protocol error, because skipping part of a message would
// desynchronise every later one. A line that is not JSON is logged to the
// stderr sink and skipped, as the server itself does. Unknown fields, such as
// the top-level emittedAtMs of notifications, are ignored.
//
// A line is classified by its keys: id plus method is a server request, id
// plus result or error is a response to one of our requests, method alone is
// a notification. The two directions have separate id spaces: ours are
// monotonic integers from 0, theirs are echoed back byte for byte (they may
// be strings or integers). Each server request is answered exactly once, on
// its own goroutine, by ProcSpec.OnRequest or with -32601 when there is
// none. When the connection ends every pending call and every unfinished
// turn fails with an error wrapping ErrClosed (and the exit status).
//
// # Turns
//
// The turn/start response arrives before turn/started, and a turn/start on a
// thread whose turn is still active is merged into that turn and answered
// with the same turn id. Turns are therefore kept in one table keyed by turn
// id and created by whichever comes first: the turn/start response (handled
// on the reader goroutine, in wire order) or a turn-scoped notification. So
// StartTurn returns the existing *Turn for a merged start, and turns nobody
// started through this client (a compaction) are tracked as well. The active
// turn of a thread is the one between turn/started and turn/completed.
//
// Each turn keeps an item table keyed by item id, in item/started order:
// item/started creates an entry, item/agentMessage/delta appends to its text,
// item/completed replaces it and is authoritative. turn/completed carries
// only a summary of the items, so the final message is the text of the last
// completed agentMessage, falling back to the summary's last item. Items
// still open at turn/completed (a stream pre-empted by a steer, a command
// whose approval was interrupted) stay in the record with Completed false.
//
// # Usage
//
// thread/tokenUsage/updated carries the thread's cumulative total and may
// repeat the same total. Usage is the difference between successive distinct
// totals of a thread, attributed to the notification's turn; the `last`
// breakdown is ignored because after a compaction it is a context estimate,
// not billed usage.
//
// # Steering
//
// turn/steer errors are mapped to ErrNoActiveTurn, *TurnMismatchError and
// *NotSteerableError from their observed messages and data. SteerOrStart
// implements the fallback: steer when the active turn accepts it, otherwise
// wait for that turn to finish and start a new one.
package appserver
