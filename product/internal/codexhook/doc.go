// Package codexhook speaks the lifecycle-hook protocol of codex-cli 0.171.0
// for the hook side: it decodes the event a hook reads on stdin, encodes a
// Stop hook's answer, and installs a hook into codex's hooks files and the
// user's trust for it. It knows nothing about needs or markers.
//
// # The protocol, as the real binary behaves
//
// Codex reads hooks from hooks.json beside each config layer's
// config.toml (user: $CODEX_HOME/hooks.json; project: <root>/.codex/
// hooks.json, read only when the project is trusted) and from [hooks] in
// those config.toml files. It runs a command hook as `$SHELL -lc COMMAND`
// in the session's working directory with the session's environment,
// writes one JSON object (no newline) on its stdin, and kills it after its
// timeout (default 600 s). A user or project hook runs only when the
// user's config.toml trusts it (trust.go); `codex exec` skips an untrusted
// hook silently.
//
// The Stop event (event.go) carries session_id (the thread id), turn_id,
// transcript_path, cwd, hook_event_name, model, permission_mode,
// stop_hook_active and last_assistant_message (null when the turn produced
// no message). A Stop hook that exits 0 with {"decision":"block",
// "reason":R} makes codex continue the same turn — same turn id — with R
// as a new user-role input, then run the Stop hooks again with
// stop_hook_active true; anything else lets the turn end (output.go has
// the details). Codex does not bound how often a hook may continue a turn.
//
// # Decoding rule
//
// Strict where a decision depends on it, tolerant where codex may grow:
// the input must be one JSON object of valid UTF-8 without duplicate keys
// and at most MaxInput bytes; hook_event_name, session_id and cwd (and,
// for Stop, stop_hook_active and last_assistant_message) must be present;
// every field this package models must have the schema's type when
// present; other fields are listed in Event.Unknown and ignored.
//
// # Files
//
//	event.go      Event, Stop, Decode, Read: the hook input
//	output.go     StopOutput: the Stop hook's answer; Clip
//	command.go    Command, Words: an argv as a hooks-file command line and back
//	hooksfile.go  Install, Uninstall: merge a handler into hooks.json; Find reads it
//	trust.go      TrustKey, TrustHash: codex's hook trust identity
//	trustfile.go  Trust, Untrust, MoveTrust: the trust entry in the user's config.toml; TrustedHash reads it
//	config.go     InspectConfig: TOML hooks, trusted projects, editability
//	jsontree.go   an order-keeping JSON tree for faithful rewrites
//	atomic.go     symlink-following reads and atomic writes
package codexhook
