package codexhook

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/tomlstr"
)

// Trust records in the user's config.toml at configPath that codex may run
// the hook at key with definition hash (see TrustHash), the way codex's own
// review would: it appends
//
//	[hooks.state."<key>"]
//	trusted_hash = "<hash>"
//
// or updates that line in a block of exactly this form. Every edit is
// checked by decoding the new file and comparing it with the old one plus
// the one entry; a file that is not valid TOML, or one whose hooks.state is
// written in another form (an inline table, say) that the edit would not
// extend cleanly, is refused with a *FileError and left unchanged. Only a
// user config counts: codex ignores hook state in project config files.
func Trust(configPath, key, hash string) (bool, error) {
	target, data, mode, exists, err := readTarget(configPath)
	if err != nil {
		return false, err
	}
	old, err := decodeTOML(data)
	if err != nil {
		return false, &FileError{configPath, "not valid TOML: " + err.Error()}
	}
	if inlineHooks(data) {
		return false, &FileError{configPath, fmt.Sprintf(
			"hooks or hooks.state is an inline table, which cannot be extended; add [hooks.state.%s] with trusted_hash = %s by hand",
			tomlstr.Quote(key), tomlstr.Quote(hash))}
	}
	entry, hasEntry := stateEntry(old, key)
	if entry["trusted_hash"] == hash {
		return false, nil
	}
	var text []byte
	if hasEntry {
		var ok bool
		if text, ok = replaceHashLine(data, key, hash); !ok {
			return false, &FileError{configPath, fmt.Sprintf(
				"hooks.state.%s is not written as a [hooks.state.%s] table with a trusted_hash line; set trusted_hash = %s there by hand",
				tomlstr.Quote(key), tomlstr.Quote(key), tomlstr.Quote(hash))}
		}
	} else {
		text = bytes.Clone(data)
		switch {
		case len(data) == 0:
		case bytes.HasSuffix(data, []byte("\n")):
			text = append(text, '\n')
		default:
			text = append(text, "\n\n"...)
		}
		text = append(text, trustBlock(key, hash)...)
	}
	want, _ := decodeTOML(data) // a second, independent copy of old
	wantEntry, _ := stateEntry(want, key)
	if !hasEntry {
		wantEntry = map[string]any{}
		setStateEntry(want, key, wantEntry)
	}
	wantEntry["trusted_hash"] = hash
	if err := checkEdit(text, want); err != nil {
		return false, &FileError{configPath, "cannot record hook trust safely: " + err.Error()}
	}
	if !exists {
		mode = 0o600
	}
	if err := writeAtomic(target, text, mode); err != nil {
		return false, fmt.Errorf("codexhook: writing %s: %w", configPath, err)
	}
	return true, nil
}

// Untrust removes the block Trust wrote for key, if it is still exactly
// that block with hash; any other form of the entry is left for the user.
// It reports whether the file changed.
func Untrust(configPath, key, hash string) (bool, error) {
	target, data, mode, exists, err := readTarget(configPath)
	if err != nil || !exists {
		return false, err
	}
	old, err := decodeTOML(data)
	if err != nil {
		return false, &FileError{configPath, "not valid TOML: " + err.Error()}
	}
	entry, ok := stateEntry(old, key)
	if !ok || len(entry) != 1 || entry["trusted_hash"] != hash {
		return false, nil
	}
	block := []byte(trustBlock(key, hash))
	i := bytes.Index(data, block)
	if i < 0 || (i > 0 && data[i-1] != '\n') {
		return false, nil
	}
	text := append(bytes.Clone(data[:i]), data[i+len(block):]...)
	text = bytes.TrimRight(text, "\n")
	if len(text) > 0 {
		text = append(text, '\n')
	}
	want, _ := decodeTOML(data)
	state := want["hooks"].(map[string]any)["state"].(map[string]any)
	delete(state, key)
	if err := checkEdit(text, want); err != nil {
		return false, nil // not the plain block it looked like: leave it
	}
	if err := writeAtomic(target, text, mode); err != nil {
		return false, fmt.Errorf("codexhook: writing %s: %w", configPath, err)
	}
	return true, nil
}

// MoveTrust re-keys the trust of a hook that changed position in its
// hooks file (Result.Moved): the entry at from, when it is exactly a block
// Trust would write and to has none, moves to to with the same hash (the
// hash does not depend on the position). Any other form is left for the
// user, who codex will then ask to review the hook again. It reports
// whether the file changed.
func MoveTrust(configPath, from, to string) (bool, error) {
	target, data, mode, exists, err := readTarget(configPath)
	if err != nil || !exists || from == to {
		return false, err
	}
	old, err := decodeTOML(data)
	if err != nil {
		return false, &FileError{configPath, "not valid TOML: " + err.Error()}
	}
	entry, ok := stateEntry(old, from)
	hash, isString := entry["trusted_hash"].(string)
	if _, taken := stateEntry(old, to); !ok || len(entry) != 1 || !isString || taken {
		return false, nil
	}
	block := []byte(trustBlock(from, hash))
	i := bytes.Index(data, block)
	if i < 0 || (i > 0 && data[i-1] != '\n') {
		return false, nil
	}
	text := append(append(bytes.Clone(data[:i]), trustBlock(to, hash)...), data[i+len(block):]...)
	want, _ := decodeTOML(data)
	setStateEntry(want, to, map[string]any{"trusted_hash": hash})
	delete(want["hooks"].(map[string]any)["state"].(map[string]any), from)
	if err := checkEdit(text, want); err != nil {
		return false, nil // not the plain block it looked like: leave it
	}
	if err := writeAtomic(target, text, mode); err != nil {
		return false, fmt.Errorf("codexhook: writing %s: %w", configPath, err)
	}
	return true, nil
}

// These match a line that assigns an inline table to hooks or hooks.state
// (checked anywhere outside [hooks], which may refuse a file needlessly but
// never lets one through), or to state inside [hooks].
var (
	inlineTop   = lazyregexp.New(`^\s*["']?hooks["']?\s*(\.\s*["']?state["']?\s*)?=\s*\{`)
	inlineState = lazyregexp.New(`^\s*["']?state["']?\s*=\s*\{`)
	header      = lazyregexp.New(`^\s*\[`)
	hooksHeader = lazyregexp.New(`^\s*\[\s*["']?hooks["']?\s*\]`)
)

// inlineHooks reports whether the config defines hooks or hooks.state as
// an inline table. TOML closes inline tables: appending a
// [hooks.state."…"] table to one makes the file invalid for codex's
// parser, though not for the Go decoder that checks our edits, so this
// lexical check stands in front of it. It errs on the side of refusing.
func inlineHooks(data []byte) bool {
	inHooks := false
	for _, line := range strings.Split(string(data), "\n") {
		if header.MatchString(line) {
			inHooks = hooksHeader.MatchString(line)
			continue
		}
		if inlineTop.MatchString(line) && !inHooks || inHooks && inlineState.MatchString(line) {
			return true
		}
	}
	return false
}

func trustBlock(key, hash string) string {
	return "[hooks.state." + tomlstr.Quote(key) + "]\ntrusted_hash = " + tomlstr.Quote(hash) + "\n"
}

// replaceHashLine rewrites the trusted_hash line of a [hooks.state."key"]
// table written in the form trustBlock writes.
func replaceHashLine(data []byte, key, hash string) ([]byte, bool) {
	lines := strings.SplitAfter(string(data), "\n")
	header := "[hooks.state." + tomlstr.Quote(key) + "]"
	for i, l := range lines {
		if strings.TrimSpace(l) != header {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if strings.HasPrefix(t, "[") {
				break
			}
			if strings.HasPrefix(t, "trusted_hash") && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t, "trusted_hash")), "=") {
				nl := ""
				if strings.HasSuffix(lines[j], "\n") {
					nl = "\n"
				}
				lines[j] = "trusted_hash = " + tomlstr.Quote(hash) + nl
				return []byte(strings.Join(lines, "")), true
			}
		}
		return nil, false
	}
	return nil, false
}

// checkEdit decodes text and compares it with want, empty tables ignored
// on both sides.
func checkEdit(text []byte, want map[string]any) error {
	got, err := decodeTOML(text)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(prune(got), prune(want)) {
		return fmt.Errorf("the edited file would not mean the old one plus the entry")
	}
	return nil
}

func decodeTOML(data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// stateEntry returns hooks.state[key] when it is a table.
func stateEntry(doc map[string]any, key string) (map[string]any, bool) {
	hooks, _ := doc["hooks"].(map[string]any)
	state, _ := hooks["state"].(map[string]any)
	entry, ok := state[key].(map[string]any)
	return entry, ok
}

func setStateEntry(doc map[string]any, key string, entry map[string]any) {
	hooks, ok := doc["hooks"].(map[string]any)
	if !ok {
		hooks = map[string]any{}
		doc["hooks"] = hooks
	}
	state, ok := hooks["state"].(map[string]any)
	if !ok {
		state = map[string]any{}
		hooks["state"] = state
	}
	state[key] = entry
}

// prune drops empty tables, recursively.
func prune(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		x = prune(x)
		if sub, ok := x.(map[string]any); ok && len(sub) == 0 {
			continue
		}
		out[k] = x
	}
	return out
}

// TrustedHash is the trusted_hash the config.toml at configPath records
// for the hook at key ("" when it records none, or the file is missing).
// It only reads.
func TrustedHash(configPath, key string) (string, error) {
	_, data, _, exists, err := readTarget(configPath)
	if err != nil || !exists {
		return "", err
	}
	doc, err := decodeTOML(data)
	if err != nil {
		return "", &FileError{configPath, "not valid TOML: " + err.Error()}
	}
	entry, _ := stateEntry(doc, key)
	hash, _ := entry["trusted_hash"].(string)
	return hash, nil
}
