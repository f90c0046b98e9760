package codexhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A hooks file (hooks.json beside a config.toml: ~/.codex/hooks.json for
// the user, <project>/.codex/hooks.json for a project) is
//
//	{"hooks": {"Stop": [{"matcher": …, "hooks": [{"type": "command",
//	  "command": "…", "timeout": 30, "statusMessage": "…"}]}], …}}
//
// Codex runs a command with `$SHELL -lc COMMAND` in the session's working
// directory, the hook event on stdin, killing it after its timeout.
// Install and Uninstall edit only the handlers a Spec owns: every other
// key, event, group and handler is written back as it was, in its order.
// They validate the whole edited event before writing anything, write
// atomically, and leave the file untouched on any error.

// Spec is the hook an installer manages.
type Spec struct {
	Event   EventName
	Handler Handler
	// Owns reports whether a command found in the file is one this
	// installer manages (for example `needle hook codex …` at any path).
	Owns func(command string) bool
}

// FileError reports a hooks or config file that cannot be edited safely;
// nothing was changed.
type FileError struct {
	Path string
	Msg  string
}

func (e *FileError) Error() string { return "codexhook: " + e.Path + ": " + e.Msg }

// Result says what Install or Uninstall did.
type Result struct {
	Path    string // the file as codex names it (absolute)
	Changed bool
	// Key and Hash are the installed handler's trust key and trusted hash
	// (Install only).
	Key, Hash string
	// Moved lists other handlers of the event whose position, and so trust
	// key, changed: codex will ask the user to trust them again unless
	// their state entry is moved from From to To (MoveTrust).
	Moved []Moved
	// Removed lists the owned handlers taken out of the file (by
	// Uninstall, or duplicates collapsed by Install) with the trust key
	// and hash they had, for Untrust.
	Removed []Trusted
}

// Trusted is a handler's trust identity.
type Trusted struct{ Key, Hash string }

// Moved is a handler that changed position.
type Moved struct{ From, To string }

// Install makes the hooks file at path hold exactly one handler owned by
// spec, equal to spec.Handler: it appends a new matcher group at the end of
// the event (so no other hook changes position) or updates the owned
// handler in place, and removes further owned handlers. Installing twice
// changes nothing the second time.
func Install(path string, spec Spec) (Result, error) {
	return edit(path, spec, true)
}

// Uninstall removes every handler owned by spec from the hooks file at
// path, and the matcher groups that only they filled.
func Uninstall(path string, spec Spec) (Result, error) {
	return edit(path, spec, false)
}

// edit installs (install) or uninstalls spec's handler in the hooks file
// at path, reporting the trust keys that moved or went away.
func edit(path string, spec Spec, install bool) (Result, error) {
	if err := checkSpec(spec, install); err != nil {
		return Result{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: abs}
	target, data, mode, exists, err := readTarget(abs)
	if err != nil {
		return res, err
	}
	if !exists && !install {
		return res, nil
	}
	root := objectNode()
	if exists && len(bytes.TrimSpace(data)) > 0 {
		if root, err = parseTree(data); err != nil {
			return res, &FileError{abs, "not valid JSON: " + err.Error()}
		}
	}
	groups, err := eventGroups(root, spec.Event)
	if err != nil {
		return res, &FileError{abs, err.Error()}
	}
	before := positions(groups)
	owners := ownedHandlers(groups, spec)
	var mine *node
	if install {
		mine = handlerNode(spec.Handler)
		groups = placeHandler(groups, mine, spec.Owns)
	} else {
		groups = dropOwned(groups, spec.Owns, nil)
	}
	after := positions(groups)
	res.Moved, res.Removed = trustChanges(abs, spec.Event, before, after, owners, mine)
	setEventGroups(root, spec.Event, groups)
	if install {
		at := after[mine]
		res.Key = TrustKey(abs, spec.Event, at[0], at[1])
		res.Hash = TrustHash(spec.Event, nil, spec.Handler)
	}
	if exists && sameTree(data, root) {
		return res, nil // already so: the user's formatting stays
	}
	out := root.encode()
	if !exists {
		mode = 0o644
	}
	if err := writeAtomic(target, out, mode); err != nil {
		return res, fmt.Errorf("codexhook: writing %s: %w", abs, err)
	}
	res.Changed = true
	return res, nil
}

// checkSpec refuses a spec edit cannot apply safely: an unknown event, an
// owner test that does not claim the spec's own handler (installing it
// could not be undone), or a handler with no command or a negative timeout.
func checkSpec(spec Spec, install bool) error {
	if !spec.Event.Known() {
		return fmt.Errorf("codexhook: unknown event %q", spec.Event)
	}
	if spec.Owns == nil || (install && !spec.Owns(spec.Handler.Command)) {
		return errors.New("codexhook: the spec does not own its own handler")
	}
	if install && (strings.TrimSpace(spec.Handler.Command) == "" || spec.Handler.Timeout < 0) {
		return errors.New("codexhook: a handler needs a command and a timeout of 0 (default) or more")
	}
	return nil
}

// trustChanges compares the handlers' positions before and after an edit:
// the trust keys of handlers that kept their place elsewhere (moved, in
// order) and of owned handlers that are gone, other than mine.
func trustChanges(abs string, event EventName, before, after map[*node][2]int, owners []ownedHandler, mine *node) ([]Moved, []Trusted) {
	var moved []Moved
	var removed []Trusted
	for n, from := range before {
		if to, ok := after[n]; ok && to != from {
			moved = append(moved, Moved{
				From: TrustKey(abs, event, from[0], from[1]),
				To:   TrustKey(abs, event, to[0], to[1])})
		}
	}
	sortMoved(moved)
	for _, o := range owners {
		if _, kept := after[o.node]; !kept && o.node != mine {
			from := before[o.node]
			removed = append(removed, Trusted{Key: TrustKey(abs, event, from[0], from[1]), Hash: o.hash})
		}
	}
	return moved, removed
}

// setEventGroups puts the event's groups under "hooks", creating it, or
// removes the event when no group is left.
func setEventGroups(root *node, event EventName, groups *node) {
	hooks := root.get("hooks")
	switch {
	case len(groups.items) > 0 && hooks == nil:
		root.set("hooks", objectNode(member{string(event), groups}))
	case len(groups.items) > 0:
		hooks.set(string(event), groups)
	case hooks != nil:
		hooks.remove(string(event))
	}
}

// sameTree reports whether data already means tree.
func sameTree(data []byte, tree *node) bool {
	old, err := parseTree(data)
	return err == nil && bytes.Equal(old.encode(), tree.encode())
}

// eventGroups returns the event's matcher-group array, checking the shape
// codex requires of everything it will index: an object at the top, an
// object under "hooks", an array of group objects whose "hooks" are arrays
// of handler objects with a string "type" (and, for commands, a string
// "command"). A missing container reads as an empty array.
func eventGroups(root *node, event EventName) (*node, error) {
	if root.kind != kindObject {
		return nil, errors.New("the top level is not a JSON object")
	}
	hooks := root.get("hooks")
	if hooks == nil {
		return arrayNode(), nil
	}
	if hooks.kind != kindObject {
		return nil, errors.New(`"hooks" is not an object`)
	}
	groups := hooks.get(string(event))
	if groups == nil {
		return arrayNode(), nil
	}
	if groups.kind != kindArray {
		return nil, fmt.Errorf("hooks.%s is not an array", event)
	}
	for g, group := range groups.items {
		at := fmt.Sprintf("hooks.%s[%d]", event, g)
		if group.kind != kindObject {
			return nil, fmt.Errorf("%s is not an object", at)
		}
		if m := group.get("matcher"); m != nil {
			if _, ok := m.str(); !ok && !(m.kind == kindScalar && m.scalar == nil) {
				return nil, fmt.Errorf("%s.matcher is not a string", at)
			}
		}
		handlers := group.get("hooks")
		if handlers == nil {
			continue
		}
		if handlers.kind != kindArray {
			return nil, fmt.Errorf("%s.hooks is not an array", at)
		}
		for h, handler := range handlers.items {
			hat := fmt.Sprintf("%s.hooks[%d]", at, h)
			if handler.kind != kindObject {
				return nil, fmt.Errorf("%s is not an object", hat)
			}
			typ, ok := handler.get("type").str()
			if !ok {
				return nil, fmt.Errorf("%s.type is missing or not a string", hat)
			}
			if _, ok := handler.get("command").str(); typ == "command" && !ok {
				return nil, fmt.Errorf("%s.command is missing or not a string", hat)
			}
		}
	}
	return groups, nil
}

// owned reports whether handler is a command the spec owns.
func owned(handler *node, owns func(string) bool) bool {
	typ, _ := handler.get("type").str()
	cmd, ok := handler.get("command").str()
	return typ == "command" && ok && owns(cmd)
}

// placeHandler puts mine where the first owned handler is (or in a new
// group at the end) and drops every other owned handler.
func placeHandler(groups *node, mine *node, owns func(string) bool) *node {
	for _, group := range groups.items {
		handlers := group.get("hooks")
		if handlers == nil {
			continue
		}
		for h, handler := range handlers.items {
			if owned(handler, owns) {
				if bytes.Equal(handler.encode(), mine.encode()) {
					*mine = *handler // keep the very node, so positions match
					handlers.items[h] = mine
				} else {
					handlers.items[h] = mine
				}
				return dropOwned(groups, owns, mine)
			}
		}
	}
	groups.items = append(groups.items, objectNode(member{"hooks", arrayNode(mine)}))
	return groups
}

// dropOwned removes owned handlers other than keep, and the groups they
// leave empty.
func dropOwned(groups *node, owns func(string) bool, keep *node) *node {
	var kept []*node
	for _, group := range groups.items {
		handlers := group.get("hooks")
		if handlers == nil || len(handlers.items) == 0 {
			kept = append(kept, group)
			continue
		}
		var left []*node
		for _, handler := range handlers.items {
			if handler == keep || !owned(handler, owns) {
				left = append(left, handler)
			}
		}
		if len(left) == 0 {
			continue
		}
		handlers.items = left
		kept = append(kept, group)
	}
	groups.items = kept
	return groups
}

// positions maps each handler node to its [group, handler] index.
func positions(groups *node) map[*node][2]int {
	at := map[*node][2]int{}
	for g, group := range groups.items {
		if handlers := group.get("hooks"); handlers != nil {
			for h, handler := range handlers.items {
				at[handler] = [2]int{g, h}
			}
		}
	}
	return at
}

func handlerNode(h Handler) *node {
	n := objectNode(member{"type", stringNode("command")}, member{"command", stringNode(h.Command)})
	if h.Timeout > 0 {
		n.set("timeout", numberNode(h.Timeout))
	}
	if h.StatusMessage != "" {
		n.set("statusMessage", stringNode(h.StatusMessage))
	}
	return n
}

func sortMoved(ms []Moved) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].From < ms[j].From })
}

// ownedHandler is a handler the spec owns with the trust hash of what the
// file says of it ("" when its timeout is not a whole number codex would
// read).
type ownedHandler struct {
	node *node
	hash string
}

func ownedHandlers(groups *node, spec Spec) []ownedHandler {
	var out []ownedHandler
	for _, group := range groups.items {
		handlers := group.get("hooks")
		if handlers == nil {
			continue
		}
		var matcher *string
		if m, ok := group.get("matcher").str(); ok {
			matcher = &m
		}
		for _, handler := range handlers.items {
			if !owned(handler, spec.Owns) {
				continue
			}
			h := Handler{}
			h.Command, _ = handler.get("command").str()
			h.StatusMessage, _ = handler.get("statusMessage").str()
			hash := ""
			if t := handler.get("timeout"); t == nil {
				hash = TrustHash(spec.Event, matcher, h)
			} else if n, ok := t.scalar.(json.Number); ok {
				if v, err := strconv.Atoi(n.String()); err == nil && v >= 0 {
					h.Timeout = v
					hash = TrustHash(spec.Event, matcher, h)
				}
			}
			out = append(out, ownedHandler{handler, hash})
		}
	}
	return out
}

// Found is an owned handler in a hooks file: its command line, and the
// trust key and hash codex gives it.
type Found struct {
	Trusted
	Command string
}

// Find lists, reading only, the handlers of the hooks file at path that
// spec owns, each with the trust key and hash codex gives it (a hash of ""
// when its timeout is not a whole number codex would read). A missing file
// has none; a file Install would refuse is a *FileError.
func Find(path string, spec Spec) ([]Found, error) {
	if !spec.Event.Known() || spec.Owns == nil {
		return nil, fmt.Errorf("codexhook: unknown event %q or no owner test", spec.Event)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	_, data, _, exists, err := readTarget(abs)
	if err != nil || !exists || len(bytes.TrimSpace(data)) == 0 {
		return nil, err
	}
	root, err := parseTree(data)
	if err != nil {
		return nil, &FileError{abs, "not valid JSON: " + err.Error()}
	}
	groups, err := eventGroups(root, spec.Event)
	if err != nil {
		return nil, &FileError{abs, err.Error()}
	}
	at := positions(groups)
	var out []Found
	for _, o := range ownedHandlers(groups, spec) {
		pos := at[o.node]
		command, _ := o.node.get("command").str()
		out = append(out, Found{Trusted{Key: TrustKey(abs, spec.Event, pos[0], pos[1]), Hash: o.hash}, command})
	}
	return out, nil
}
