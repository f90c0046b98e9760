package product

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/mdblock"
)

// markerPrefix starts a @@need marker line. The grammar is in doc.go.
const markerPrefix = "@@need"

const opMarker = "need.marker"

// compileMarker parses one @@need marker line and compiles it.
func compileMarker(line string, routes routeSet) (compiledNeed, error) {
	req, err := ParseMarker(line)
	if err != nil {
		return compiledNeed{}, err
	}
	return Compile(req, routes)
}

// findMarker returns the one @@need marker line of a message (markerLines).
// No marker, or more than one, is KindInvalidInput.
func findMarker(message string) (string, error) {
	found := markerLines(message)
	switch len(found) {
	case 0:
		return "", invalidf(opMarker, "marker", "no %s marker line", markerPrefix)
	case 1:
		return found[0], nil
	}
	return "", invalidf(opMarker, "marker", "%d %s marker lines; want exactly one", len(found), markerPrefix)
}

// markerLines returns the @@need marker lines of a message, leading spaces
// removed: the lines of its top-level paragraphs (CommonMark block
// structure, product/internal/mdblock) that start with "@@need" after at
// most three spaces, followed by a blank or the end of the line. A marker
// shown in a fenced or indented code block, an HTML block, a block quote
// or a list item is not one; doc.go has the rule.
func markerLines(message string) []string {
	var found []string
	for _, l := range mdblock.Lines(message) {
		if !l.TopLevel {
			continue
		}
		line := strings.TrimLeft(l.Text, " ")
		if len(l.Text)-len(line) > 3 {
			continue
		}
		rest, ok := strings.CutPrefix(line, markerPrefix)
		if ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			found = append(found, line)
		}
	}
	return found
}

// ParseMarker parses one @@need marker line strictly into the same typed
// request the JSON form decodes to. Errors are KindInvalidInput; their Path
// is the JSON path of the equivalent need_context field ("required[1]
// .granularity") or "marker" for a syntax error, and the message gives the
// column.
func ParseMarker(line string) (NeedRequest, error) {
	if len(line) > maxMarkerBytes {
		return NeedRequest{}, invalidf(opMarker, "marker", "marker is %d bytes; the limit is %d", len(line), maxMarkerBytes)
	}
	if !utf8.ValidString(line) {
		return NeedRequest{}, invalidf(opMarker, "marker", "marker is not valid UTF-8")
	}
	p := &markerParser{s: line}
	return p.parse()
}

type markerParser struct {
	s   string
	pos int // byte offset of the next unread character
	req NeedRequest
	set map[string]bool // settings seen
}

func (p *markerParser) errorf(path string, format string, args ...any) error {
	return invalidf(opMarker, path, "%s (column %d)", fmt.Sprintf(format, args...), utf8.RuneCountInString(p.s[:p.pos])+1)
}

func (p *markerParser) parse() (NeedRequest, error) {
	if !strings.HasPrefix(p.s, markerPrefix) {
		return NeedRequest{}, p.errorf("marker", "a marker starts with %s", markerPrefix)
	}
	p.pos = len(markerPrefix)
	if !p.blanks() {
		return NeedRequest{}, p.errorf("marker", "want a blank after %s", markerPrefix)
	}
	route, err := p.word("route")
	if err != nil {
		return NeedRequest{}, err
	}
	p.req.Route = route
	if !p.blanks() {
		return NeedRequest{}, p.errorf("marker", "want a blank and then the subject, as kind:name")
	}
	if err := p.subject(); err != nil {
		return NeedRequest{}, err
	}
	p.set = map[string]bool{}
	for p.pos < len(p.s) {
		if !p.blanks() {
			return NeedRequest{}, p.errorf("marker", "want a blank between clauses, got %q", p.peek())
		}
		if p.pos == len(p.s) {
			break
		}
		if err := p.clause(); err != nil {
			return NeedRequest{}, err
		}
	}
	return p.req, nil
}

// blanks skips spaces and tabs and reports whether there were any or the
// line ended.
func (p *markerParser) blanks() bool {
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
	return p.pos > start || p.pos == len(p.s)
}

func (p *markerParser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return r
}

// isWordRune reports whether r may appear in an unquoted word.
func isWordRune(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsControl(r) && !strings.ContainsRune("\"(),=", r)
}

// word reads an unquoted word; what names it in errors.
func (p *markerParser) word(path string) (string, error) {
	start := p.pos
	for p.pos < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.pos:])
		if !isWordRune(r) {
			break
		}
		p.pos += size
	}
	if p.pos == start {
		if p.pos == len(p.s) {
			return "", p.errorf(path, "unexpected end of marker")
		}
		return "", p.errorf(path, "unexpected %q", p.peek())
	}
	return p.s[start:p.pos], nil
}

// value reads a word or a quoted string.
func (p *markerParser) value(path string) (string, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '"' {
		return p.quoted(path)
	}
	return p.word(path)
}

// quoted reads a double-quoted string with the escapes \" \\ \n \t.
func (p *markerParser) quoted(path string) (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for p.pos < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.pos:])
		switch {
		case r == '"':
			p.pos += size
			return b.String(), nil
		case r == '\\':
			p.pos += size
			esc := map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 't': '\t'}
			if p.pos == len(p.s) {
				return "", p.errorf(path, "unterminated escape")
			}
			c, ok := esc[p.s[p.pos]]
			if !ok {
				return "", p.errorf(path, "unknown escape \\%c; want \\\" \\\\ \\n or \\t", p.peek())
			}
			b.WriteByte(c)
			p.pos++
		case unicode.IsControl(r):
			return "", p.errorf(path, "control character %q in a quoted string", r)
		default:
			b.WriteRune(r)
			p.pos += size
		}
	}
	return "", p.errorf(path, "unterminated quoted string")
}

func (p *markerParser) subject() error {
	start := p.pos
	for p.pos < len(p.s) && ('a' <= p.s[p.pos] && p.s[p.pos] <= 'z' || p.s[p.pos] == '_') {
		p.pos++
	}
	if p.pos == start || p.pos == len(p.s) || p.s[p.pos] != ':' {
		return p.errorf("subject", "want the subject as kind:name, e.g. cli_option:--crlf")
	}
	p.req.Subject.Kind = p.s[start:p.pos]
	p.pos++ // ':'
	name, err := p.value("subject.name")
	if err != nil {
		return err
	}
	p.req.Subject.Name = name
	return nil
}

// clause reads "+cap(facets)", "?cap(facets)" or "key=value".
func (p *markerParser) clause() error {
	switch p.s[p.pos] {
	case '+':
		return p.obligation("required", &p.req.Required)
	case '?':
		return p.obligation("preferred", &p.req.Preferred)
	}
	return p.setting()
}

func (p *markerParser) obligation(list string, dst *[]ObligationRequest) error {
	p.pos++ // '+' or '?'
	if *dst == nil {
		*dst = []ObligationRequest{}
	}
	path := fmt.Sprintf("%s[%d]", list, len(*dst))
	if len(*dst) == maxObligations {
		return p.errorf(list, "too many obligations; the limit is %d", maxObligations)
	}
	kind, err := p.word(path + ".kind")
	if err != nil {
		return err
	}
	o := ObligationRequest{Kind: kind}
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		for {
			name, err := p.word(path)
			if err != nil {
				return err
			}
			fpath := path + "." + name
			if p.pos == len(p.s) || p.s[p.pos] != '=' {
				return p.errorf(fpath, "want %s=value", name)
			}
			p.pos++
			value, err := p.word(fpath)
			if err != nil {
				return err
			}
			o.Facets = append(o.Facets, facetRequest{Name: name, Value: value})
			if p.pos == len(p.s) {
				return p.errorf(path, "unterminated facet list; want )")
			}
			if p.s[p.pos] == ')' {
				p.pos++
				break
			}
			if p.s[p.pos] != ',' {
				return p.errorf(path, "want , or ) after a facet, got %q", p.peek())
			}
			p.pos++
		}
	}
	*dst = append(*dst, o)
	return nil
}

func (p *markerParser) setting() error {
	key, err := p.word("marker")
	if err != nil {
		return err
	}
	path := "world." + key
	if key == "task" {
		path = key
	}
	switch key {
	case "source", "platform", "features", "task":
	default:
		p.pos -= len(key)
		return p.errorf("marker", "unknown clause %q; want +capability, ?capability, source=, platform=, features= or task=", key)
	}
	if p.set[key] {
		p.pos -= len(key)
		return p.errorf(path, "duplicate clause %s=", key)
	}
	p.set[key] = true
	if p.pos == len(p.s) || p.s[p.pos] != '=' {
		return p.errorf(path, "want %s=value", key)
	}
	p.pos++
	if key == "features" {
		return p.features()
	}
	value, err := p.value(path)
	if err != nil {
		return err
	}
	switch key {
	case "source":
		p.req.World.Source = value
	case "platform":
		p.req.World.Platform = value
	case "task":
		p.req.Task = value
	}
	if value == "" && key != "task" {
		return p.errorf(path, "empty value; omit the clause for its default")
	}
	return nil
}

// features reads "default" or a comma-separated list of names.
func (p *markerParser) features() error {
	list := []string{}
	for {
		name, err := p.word(fmt.Sprintf("world.features[%d]", len(list)))
		if err != nil {
			return err
		}
		list = append(list, name)
		if p.pos == len(p.s) || p.s[p.pos] != ',' {
			break
		}
		p.pos++
	}
	if len(list) == 1 && list[0] == featuresDefault {
		list = nil
	}
	p.req.World.Features = list
	return nil
}

// FormatMarker writes req as a marker line that ParseMarker reads back to
// the same request. It fails when a value cannot be written in the grammar
// (a route, capability or facet that is not a word).
func FormatMarker(req NeedRequest) (string, error) {
	var b strings.Builder
	b.WriteString(markerPrefix + " ")
	if !isWord(req.Route) {
		return "", invalidf(opMarker, "route", "route %q is not a marker word", req.Route)
	}
	b.WriteString(req.Route + " " + req.Subject.Kind + ":" + quoteIfNeeded(req.Subject.Name))
	for _, list := range []struct {
		sigil string
		obls  []ObligationRequest
	}{{"+", req.Required}, {"?", req.Preferred}} {
		for _, o := range list.obls {
			if !isWord(o.Kind) {
				return "", invalidf(opMarker, "kind", "capability %q is not a marker word", o.Kind)
			}
			b.WriteString(" " + list.sigil + o.Kind)
			for i, f := range o.Facets {
				if !isWord(f.Name) || !isWord(f.Value) {
					return "", invalidf(opMarker, f.Name, "facet %s=%s is not made of marker words", f.Name, f.Value)
				}
				b.WriteString(map[bool]string{true: "(", false: ","}[i == 0] + f.Name + "=" + f.Value)
			}
			if len(o.Facets) > 0 {
				b.WriteString(")")
			}
		}
	}
	if req.World.Source != "" {
		b.WriteString(" source=" + quoteIfNeeded(req.World.Source))
	}
	if req.World.Platform != "" {
		b.WriteString(" platform=" + quoteIfNeeded(req.World.Platform))
	}
	if req.World.Features != nil {
		for _, f := range req.World.Features {
			if !isWord(f) {
				return "", invalidf(opMarker, "world.features", "feature %q is not a marker word", f)
			}
		}
		b.WriteString(" features=" + strings.Join(req.World.Features, ","))
	}
	if req.Task != "" {
		b.WriteString(" task=" + quote(req.Task))
	}
	return b.String(), nil
}

func isWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !isWordRune(r) }) < 0
}

func quoteIfNeeded(s string) string {
	if isWord(s) {
		return s
	}
	return quote(s)
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
