package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// placeholderRE finds ${NAME} in recorded strings. Only names the header
// declares are placeholders; any other ${…} is literal text (a recorded
// shell command may well contain ${HOME}).
var placeholderRE = lazyregexp.New(`\$\{([A-Z_][A-Z0-9_]*)\}`)

// segment is a piece of a recorded string: literal text or a placeholder.
type segment struct {
	lit  string
	name string // non-empty for a placeholder
}

// matcher compares one recorded client message with the actual one. Bindings
// made while matching go to fresh and are committed only if the whole message
// matches, so a rejected message (or a rejected candidate transcript) leaves
// no trace.
type matcher struct {
	declared map[string]bool
	ignore   map[string]bool
	bound    map[string]string
	fresh    map[string]string
}

func (m *matcher) lookup(name string) (string, bool) {
	if v, ok := m.bound[name]; ok {
		return v, true
	}
	v, ok := m.fresh[name]
	return v, ok
}

// value compares exp (recorded) with act. path is the dotted key path used
// for ignoreParamKeys (arrays add nothing); where is the display path.
func (m *matcher) value(exp, act any, path, where string) error {
	if m.ignore[path] {
		return nil
	}
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			return differ(where, exp, act)
		}
		return m.object(e, a, path, where)
	case []any:
		a, ok := act.([]any)
		if !ok || len(a) != len(e) {
			return differ(where, exp, act)
		}
		for i := range e {
			if err := m.value(e[i], a[i], path, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case string:
		if a, ok := act.(string); ok && m.str(e, a) {
			return nil
		}
		return differ(where, exp, act)
	case json.Number:
		if a, ok := act.(json.Number); ok && sameNumber(e, a) {
			return nil
		}
		return differ(where, exp, act)
	default: // bool or nil
		if exp == act {
			return nil
		}
		return differ(where, exp, act)
	}
}

func (m *matcher) object(e, a map[string]any, path, where string) error {
	keys := make([]string, 0, len(e)+len(a))
	for k := range e {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := e[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, w := join(path, k), join(where, k)
		if m.ignore[p] {
			continue
		}
		ev, eok := e[k]
		av, aok := a[k]
		switch {
		case !aok:
			return fmt.Errorf("%s: missing (expected %s)", w, brief(ev))
		case !eok:
			return fmt.Errorf("%s: unexpected key (value %s)", w, brief(av))
		}
		if err := m.value(ev, av, p, w); err != nil {
			return err
		}
	}
	return nil
}

// str matches a recorded string against an actual one, binding unbound
// placeholders on first sight.
func (m *matcher) str(exp, act string) bool {
	segs := m.segments(exp)
	if len(segs) == 1 && segs[0].name == "" {
		return exp == act
	}
	return m.segs(segs, act)
}

func (m *matcher) segments(s string) []segment {
	var segs []segment
	last := 0
	for _, loc := range placeholderRE.FindAllStringSubmatchIndex(s, -1) {
		name := s[loc[2]:loc[3]]
		if !m.declared[name] {
			continue
		}
		segs = append(segs, segment{lit: s[last:loc[0]]}, segment{name: name})
		last = loc[1]
	}
	return append(segs, segment{lit: s[last:]})
}

// segs matches segments against s. An unbound placeholder takes the longest
// non-empty text that lets the rest match (the prototype's greedy regex);
// every failed attempt undoes its binding.
func (m *matcher) segs(segs []segment, s string) bool {
	if len(segs) == 0 {
		return s == ""
	}
	seg := segs[0]
	if seg.name == "" {
		rest, ok := strings.CutPrefix(s, seg.lit)
		return ok && m.segs(segs[1:], rest)
	}
	if v, ok := m.lookup(seg.name); ok {
		rest, ok := strings.CutPrefix(s, v)
		return ok && m.segs(segs[1:], rest)
	}
	for i := len(s); i >= 1; i-- {
		m.fresh[seg.name] = s[:i]
		if m.segs(segs[1:], s[i:]) {
			return true
		}
	}
	delete(m.fresh, seg.name)
	return false
}

// sameNumber compares numerically, so 1 and 1.0 agree as they would in any
// JSON consumer.
func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func differ(where string, exp, act any) error {
	return fmt.Errorf("%s: expected %s, got %s", where, brief(exp), brief(act))
}

// brief renders a decoded value for a mismatch reason, bounded.
func brief(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return clip(b, 200)
}

// clip bounds text for diagnostics.
func clip(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) <= n {
		return string(b)
	}
	return fmt.Sprintf("%s…(%d more bytes)", b[:n], len(b)-n)
}
