package mdblock

import (
	"strings"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// Results of start.
const (
	noStart          = iota
	startedContainer // a block quote or list item: look for more starts in it
	startedLeaf      // a leaf block took the line
)

// maybeSpecial reports whether s may start a block other than a paragraph
// (a shortcut: nothing else is tried for other lines).
func maybeSpecial(s string) bool {
	return s != "" && strings.IndexByte("#`~*+_=<>0123456789-", s[0]) >= 0
}

var (
	atxHeading    = lazyregexp.New(`^#{1,6}(?:[ \t]+|$)`)
	setextLine    = lazyregexp.New(`^(?:=+|-+)[ \t]*$`)
	thematicBreak = lazyregexp.New(`^(?:(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|(?:-[ \t]*){3,})$`)
	orderedMarker = lazyregexp.New(`^([0-9]{1,9})([.)])`)
)

// start tries the block starts in the specification's order on the rest
// of the line, inside container (the deepest block the line continued, or
// one this line opened).
func (p *parser) start(container *block) int {
	rest := p.rest()
	deep := container.depth >= maxDepth-2 // a list item adds two levels
	if !p.indented {
		switch {
		case rest[0] == '>' && !deep:
			p.advanceNextNonspace()
			p.advanceOffset(1, false)
			if isSpaceOrTab(p.peek(p.offset)) {
				p.advanceOffset(1, true)
			}
			p.closeUnmatched()
			p.addChild(kindQuote)
			return startedContainer
		case atxHeading.MatchString(rest):
			p.closeUnmatched()
			p.addChild(kindHeading)
			p.offset = len(p.text)
			return startedLeaf
		}
		if c, n, ok := openingFence(rest); ok {
			p.closeUnmatched()
			b := p.addChild(kindCode)
			b.fenced, b.fenceChar, b.fenceLen, b.fenceOffset = true, c, n, p.indent
			p.advanceNextNonspace()
			p.advanceOffset(n, false)
			return startedLeaf
		}
		// Type 7 cannot interrupt a paragraph, not even a lazy one.
		interrupting := container.kind == kindParagraph || !p.allClosed && !p.blank && p.tip.kind == kindParagraph
		if t := htmlStart(rest, !interrupting); t > 0 {
			p.closeUnmatched()
			p.addChild(kindHTML).htmlType = t
			return startedLeaf
		}
		if container.kind == kindParagraph && setextLine.MatchString(rest) {
			p.closeUnmatched()
			container.kind = kindHeading // its lines stay text lines
			p.offset = len(p.text)
			return startedLeaf
		}
		if thematicBreak.MatchString(rest) {
			p.closeUnmatched()
			p.addChild(kindBreak)
			p.offset = len(p.text)
			return startedLeaf
		}
	}
	if !deep && (!p.indented || container.kind == kindList) && p.listItem(container) {
		return startedContainer
	}
	if p.indented && p.tip.kind != kindParagraph && !p.blank {
		p.advanceOffset(codeIndent, true)
		p.closeUnmatched()
		p.addChild(kindCode)
		return startedLeaf
	}
	return noStart
}

// openingFence reads a code fence: three or more backticks (their info
// string may not hold a backtick) or tildes.
func openingFence(s string) (byte, int, bool) {
	if s == "" || s[0] != '`' && s[0] != '~' {
		return 0, 0, false
	}
	c := s[0]
	n := len(s) - len(strings.TrimLeft(s, string(c)))
	if n < 3 || c == '`' && strings.IndexByte(s[n:], '`') >= 0 {
		return 0, 0, false
	}
	return c, n, true
}

// closingFence reads a closing fence of c: the run of c and nothing after
// it but spaces and tabs.
func closingFence(s string, c byte) (int, bool) {
	n := len(s) - len(strings.TrimLeft(s, string(c)))
	if n < 3 || strings.Trim(s[n:], " \t") != "" {
		return 0, false
	}
	return n, true
}

// listItem opens a list item (and its list, unless the tip is a list of
// the same type) when the line starts with a list marker.
func (p *parser) listItem(container *block) bool {
	if p.indent >= codeIndent {
		return false
	}
	rest := p.rest()
	var d listData
	var width int
	switch {
	case rest != "" && strings.IndexByte("*+-", rest[0]) >= 0:
		d.marker, width = rest[0], 1
	default:
		m := orderedMarker.FindStringSubmatch(rest)
		// Only an ordered list starting at 1 may interrupt a paragraph.
		if m == nil || container.kind == kindParagraph && strings.TrimLeft(m[1], "0") != "1" {
			return false
		}
		d.ordered, d.marker, width = true, m[2][0], len(m[0])
	}
	if next := p.peek(p.nextNonspace + width); next != 0 && !isSpaceOrTab(next) {
		return false
	}
	if container.kind == kindParagraph && strings.Trim(rest[width:], " \t") == "" {
		return false // an empty item cannot interrupt a paragraph
	}
	d.markerOffset = p.indent
	p.advanceNextNonspace()
	p.advanceOffset(width, true)
	startCol, startOff := p.column, p.offset
	for {
		p.advanceOffset(1, true)
		if p.column-startCol >= 5 || !isSpaceOrTab(p.peek(p.offset)) {
			break
		}
	}
	blankItem := p.offset >= len(p.text)
	spaces := p.column - startCol
	if spaces >= 5 || spaces < 1 || blankItem {
		// One space belongs to the marker; more start indented code.
		d.padding = width + 1
		p.column, p.offset = startCol, startOff
		if isSpaceOrTab(p.peek(p.offset)) {
			p.advanceOffset(1, true)
		}
	} else {
		d.padding = width + spaces
	}
	p.closeUnmatched()
	if p.tip.kind != kindList || !sameList(container.list, d) {
		p.addChild(kindList).list = d
	}
	p.addChild(kindItem).list = d
	return true
}

func sameList(a, b listData) bool { return a.ordered == b.ordered && a.marker == b.marker }

// Start and end conditions of the seven kinds of HTML blocks.
const (
	tagName   = `[A-Za-z][A-Za-z0-9-]*`
	attribute = `(?:[ \t\n]+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:[ \t\n]*=[ \t\n]*(?:[^"'=<>` + "`" + `\x00-\x20]+|'[^']*'|"[^"]*"))?)`
)

var htmlOpen = []*lazyregexp.Regexp{
	nil,
	lazyregexp.New(`(?i)^<(?:script|pre|textarea|style)(?:[ \t>]|$)`),
	lazyregexp.New(`^<!--`),
	lazyregexp.New(`^<\?`),
	lazyregexp.New(`^<![A-Za-z]`),
	lazyregexp.New(`^<!\[CDATA\[`),
	lazyregexp.New(`(?i)^</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?:[ \t]|/?>|$)`),
	lazyregexp.New(`^(?:<` + tagName + attribute + `*[ \t]*/?>|</` + tagName + `[ \t]*>)[ \t]*$`),
}

var htmlClose = []*lazyregexp.Regexp{
	nil,
	lazyregexp.New(`(?i)</(?:script|pre|textarea|style)>`),
	lazyregexp.New(`-->`),
	lazyregexp.New(`\?>`),
	lazyregexp.New(`>`),
	lazyregexp.New(`\]\]>`),
}

// htmlStart returns the kind (1-7) of HTML block s starts, or 0. Kind 7
// is tried only when allow7.
func htmlStart(s string, allow7 bool) int {
	if s == "" || s[0] != '<' {
		return 0
	}
	for t := 1; t <= 7; t++ {
		if t == 7 && (!allow7 || htmlOpen[1].MatchString(s) || type7Excluded(s)) {
			return 0
		}
		if htmlOpen[t].MatchString(s) {
			return t
		}
	}
	return 0
}

// type7Excluded: the tag names of kind 1 never start a kind 7 block.
func type7Excluded(s string) bool {
	name := strings.TrimPrefix(s[1:], "/")
	end := strings.IndexFunc(name, func(r rune) bool { return !(r == '-' || r >= '0' && r <= '9' || r|0x20 >= 'a' && r|0x20 <= 'z') })
	if end >= 0 {
		name = name[:end]
	}
	switch strings.ToLower(name) {
	case "script", "pre", "style", "textarea":
		return true
	}
	return false
}

// htmlEnds reports whether s meets the end condition of an HTML block of
// kind t (1-5; kinds 6 and 7 end at a blank line).
func htmlEnds(t int, s string) bool { return htmlClose[t].MatchString(s) }
