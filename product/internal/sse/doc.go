// Package sse is a server-sent events broker: one ordered stream of events
// fanned out to any number of HTTP subscribers, with resume. It knows
// nothing about what the events mean.
//
// # Ids and resume
//
// Every event gets the id "<epoch>-<seq>": epoch is random per Broker, seq
// counts up from 1 without gaps. The last Ring events stay in memory. A
// client that reconnects with Last-Event-ID (the header EventSource sends,
// or the last_event_id query parameter for a first connection that starts
// from a snapshot) gets every event after that id from the ring, then the
// live stream, with no event lost or repeated. When the ring no longer
// reaches back that far, or the id is of another epoch (the runtime
// restarted) or otherwise unknown, the stream begins with one "reset" event
// instead, whose id is the newest event's and whose data says why: the
// client must reload its state (through the ordinary GET routes) and then
// carry on with the live stream. Delivery is therefore at least once across
// a snapshot: a client applies events idempotently by the entity they name.
//
// # Slow subscribers and shutdown
//
// Publish never blocks: each subscriber has a bounded queue, and one whose
// queue is full is dropped — its response ends, and its EventSource
// reconnects with its Last-Event-ID and resumes from the ring. Every event
// is flushed as it is written; each write has a deadline, so a client that
// stops reading cannot hold a handler forever. Comment lines keep idle
// connections open through proxies. At most Options.MaxSubscribers streams
// (default 32) are live at once; one more is answered 503 with Retry-After,
// and its EventSource tries again. Close ends every stream and refuses new
// ones (503): register it with http.Server.RegisterOnShutdown, since
// Shutdown waits for handlers and a stream never ends by itself.
//
// Reader parses an event stream (for Go clients and tests), with bounded
// lines.
package sse
