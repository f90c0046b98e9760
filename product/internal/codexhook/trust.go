package codexhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Codex 0.171.0 runs a user or project hook only when it is trusted: the
// user's config.toml must hold
//
//	[hooks.state."<key>"]
//	trusted_hash = "sha256:<hex>"
//
// where <key> is TrustKey of the hook's place and the hash is TrustHash of
// its definition. An untrusted hook is skipped without a word under
// `codex exec` (verified); the interactive client asks the user to review
// it. Codex itself can bypass the check per run with
// --dangerously-bypass-hook-trust.

// DefaultTimeout is codex's timeout, in seconds, for a hook without one.
const DefaultTimeout = 600

// Handler is a command hook as a hooks file declares it.
type Handler struct {
	Command       string
	Timeout       int    // seconds; 0 means DefaultTimeout
	StatusMessage string // shown while the hook runs; "" for none
}

// timeout is the handler's timeout as codex normalizes it.
func (h Handler) timeout() int {
	if h.Timeout <= 0 {
		return DefaultTimeout
	}
	return h.Timeout
}

// TrustKey is codex's key for the handler at position group, handler of
// event in the hooks file at sourcePath (absolute). It depends on the
// position: moving a hook within its file makes codex ask for trust again.
func TrustKey(sourcePath string, event EventName, group, handler int) string {
	return sourcePath + ":" + labels[event] + ":" + strconv.Itoa(group) + ":" + strconv.Itoa(handler)
}

// TrustHash is the trusted_hash codex 0.171.0 computes for a command
// handler in a matcher group with matcher (nil for none): SHA-256 over the
// canonical JSON (keys sorted, serde_json's escaping) of
// {"event_name": label, "matcher": m, "hooks": [{"type": "command",
// "command": c, "timeout": t, "async": false, "statusMessage": s}]}, where
// absent optional values are left out and the timeout is normalized.
func TrustHash(event EventName, matcher *string, h Handler) string {
	handler := map[string]any{
		"type": "command", "command": h.Command, "timeout": h.timeout(), "async": false,
	}
	if h.StatusMessage != "" {
		handler["statusMessage"] = h.StatusMessage
	}
	identity := map[string]any{"event_name": labels[event], "hooks": []any{handler}}
	if matcher != nil {
		identity["matcher"] = *matcher
	}
	var b strings.Builder
	canonical(&b, identity)
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonical writes v as compact JSON with sorted keys, escaping strings
// the way serde_json does (only '"', '\\' and control characters; no HTML
// or U+2028 escapes, unlike encoding/json).
func canonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			serdeString(b, k)
			b.WriteByte(':')
			canonical(b, v[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			canonical(b, x)
		}
		b.WriteByte(']')
	case string:
		serdeString(b, v)
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	default:
		panic(fmt.Sprintf("codexhook: canonical: unexpected %T", v))
	}
}

func serdeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	b.WriteByte('"')
}
