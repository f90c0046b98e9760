// Package product is Needle's product core: the one package that knows what a
// need, an obligation, a piece of evidence, a worker or a change is. The
// needle command (cmd/needle) is a thin main around Main, and the
// benchmark harness (package bench) drives this package only through its
// public API and binaries. Domain-free mechanism lives in product/internal
// leaves (content ids, the SQLite migrator, …), which never import product.
//
// # Pipeline
//
// A main coding model asks for a typed need through MCP (need_context, JSON)
// or by writing a @@need marker line that a lifecycle hook picks up. Both are
// untrusted input and decode into the same NeedRequest; MCP never parses
// markers and markers are never tool arguments.
//
//	transport input (JSON or marker)
//	-> compile typed need (Compile: pure, closed input, typed errors)
//	-> freeze subject, world, obligations, route snapshot
//	-> exact request lookup by need_id
//	-> artifact and claim candidate lookup
//	-> freshness and contradiction checks
//	-> predicate satisfaction and proof replay
//	-> valid plan set -> economic selection
//	-> hit, partial worker request, fresh worker, or bypass
//	-> bounded FrontierView -> main continuation
//
// This version implements the first two stages and the store; the later
// stages arrive with their issues and keep the same vocabulary.
//
// # Compilation and identity
//
// Compile turns a NeedRequest into a NeedIR: the route, the subject
// {kind, name} with the name in Unicode NFC, the obligations (capability
// kind, required or preferred, and the facets that qualify it) sorted by
// capability kind, and the world {source, platform, features}. The route's
// minimum obligations are merged in: a missing kind is added as required, a
// preferred one is promoted, a facet the minimum names is filled in when
// omitted, raised when it is an ordered facet set weaker by the caller
// (selection primary < representative < exhaustive, completeness
// open_world < contract_complete, granularity summary < stepwise), and must
// agree when unordered (polarity, scenario). No other facet is ever invented:
// an omitted facet is unconstrained.
//
//	route                  minimum
//	locate.implementation  implementation_location(selection=primary)
//	trace.state-flow       implementation_location(selection=primary) + runtime_flow(scenario=default)
//	tests.relevant         focused_tests(selection=representative)
//
// The need_id is "b3:" + hex BLAKE3-256 over the tag "needle.need.v1", a zero
// byte and the canonical JSON of the NeedIR (sorted keys, no insignificant
// white space, NFC strings). The task text is carried for the worker prompt
// but is not part of the IR, so rewording it, reordering keys or obligations,
// or spelling out defaults never changes the id; any change of meaning does.
// The semantic-definition id (DefinitionID) hashes the route table, the
// capability and facet tables, the subject kinds and CompilerVersion.
//
// Input is closed at every level: unknown fields, duplicate JSON object keys,
// wrong JSON types, trailing data, invalid UTF-8, duplicate capability kinds,
// a kind both required and preferred, a facet the kind does not take, an
// unknown enum value, a disabled route, a malformed digest, an empty or
// oversized subject, too many obligations and an oversized task are each a
// KindInvalidInput *Error whose Path is the JSON path of the offending value
// ("required[1].granularity"). The bounds are in bounds.go.
//
// # The @@need marker
//
// A marker is one line that a main model writes in its message. It carries
// exactly what a need_context request carries, and ParseMarker yields the
// same NeedRequest as the JSON twin, so both compile to the same need_id.
// FindMarker picks the one marker line out of a message (leading blanks
// allowed); none, or more than one, is invalid input.
//
//	marker     = "@@need" blanks route blanks subject *( blanks clause ) [blanks]
//	route      = word                          ; e.g. trace.state-flow
//	subject    = kind ":" value                ; kind is [a-z_]+, e.g. cli_option:--crlf
//	clause     = obligation / setting
//	obligation = ( "+" / "?" ) word [ "(" facet *( "," facet ) ")" ]
//	                                           ; + required, ? preferred, in order
//	facet      = word "=" word                 ; e.g. selection=primary
//	setting    = "source=" value / "platform=" value / "task=" value
//	           / "features=" word *( "," word )   ; "default" or a sorted list
//	value      = word / quoted
//	word       = 1*( any character but blanks, control characters and " ( ) , = )
//	quoted     = DQUOTE *( character / "\" ( DQUOTE / "\" / "n" / "t" ) ) DQUOTE
//	blanks     = 1*( SP / HTAB )
//
// For example, the twin of the MCP seed's need_context example:
//
//	@@need trace.state-flow cli_option:--crlf +implementation_location(polarity=positive,selection=primary) +runtime_flow(scenario=default,completeness=contract_complete,granularity=stepwise) ?focused_tests(polarity=positive,selection=representative,completeness=open_world) task="Trace how --crlf changes matching and search line terminators."
//
// Each setting may appear once. Errors name the JSON path of the equivalent
// need_context field (or "marker" for pure syntax) and the column.
// FormatMarker writes the canonical marker of a request.
//
// # Store
//
// SQLite (modernc.org/sqlite, no cgo) in DATA_DIR/needle.db is the source of
// truth. OpenStore sets and reads back journal_mode=WAL, foreign_keys=1 and
// busy_timeout, and guards application_id ("NEDL"): a database of another
// application is refused and left unchanged. Migrations are embedded from
// migrations/NNNN_name.sql and applied in order, each under BEGIN IMMEDIATE
// with PRAGMA user_version bumped and its BLAKE3 digest recorded in
// schema_migrations in the same transaction. At every open the digest of
// every applied migration is compared with the binary's text: a mismatch,
// or a database newer than the binary, refuses to open. Migrations are
// additive and shipped text never changes.
//
// # Invariants
//
//   - Compile and everything in compile*.go are pure: no database, network or
//     subprocess (a test checks the imports).
//   - Invalid input changes nothing and is reported before anything is
//     stored.
//   - Same meaning, same id, on any machine; the task wording is not meaning.
//   - Stale, contradicted or unvalidated evidence is never returned (from the
//     resolver issue on).
package product
