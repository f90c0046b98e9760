package mdblock

import "strings"

// Line is one line of a document.
type Line struct {
	Text string // without its line ending
	// TopLevel is true for a line of a paragraph or setext heading that is
	// a direct child of the document.
	TopLevel bool
}

// Lines splits src into lines and says which are top-level text.
func Lines(src string) []Line {
	p := &parser{doc: &block{kind: kindDocument, open: true}}
	p.tip = p.doc
	texts := split(src)
	for i, text := range texts {
		p.line(i, text)
	}
	out := make([]Line, len(texts))
	for i, text := range texts {
		out[i].Text = text
	}
	for _, pl := range p.textLines {
		if pl.b.parent == p.doc {
			out[pl.line].TopLevel = true
		}
	}
	return out
}

// split cuts src at LF, CR LF and lone CR. A final line ending does not
// start another line.
func split(src string) []string {
	var out []string
	for src != "" {
		i := strings.IndexAny(src, "\r\n")
		if i < 0 {
			out = append(out, src)
			break
		}
		out = append(out, src[:i])
		if src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n' {
			i++
		}
		src = src[i+1:]
	}
	return out
}

type kind int

const (
	kindDocument kind = iota
	kindQuote
	kindList
	kindItem
	kindParagraph
	kindHeading
	kindBreak
	kindCode
	kindHTML
)

// block is an open or closed block of the tree; only what the structure
// needs is kept.
type block struct {
	kind   kind
	parent *block
	last   *block // last child
	open   bool
	depth  int // ancestors

	list listData // list and item

	fenced      bool // code
	fenceChar   byte
	fenceLen    int
	fenceOffset int

	htmlType int // html: 1-7
}

type listData struct {
	ordered      bool
	marker       byte // bullet character or ordered delimiter
	markerOffset int  // columns before the marker
	padding      int  // marker width plus the spaces after it
	hasChildren  bool // the item holds a block (an item starting blank may not stay blank)
}

// acceptsLines reports whether lines are added to the block itself.
func (b *block) acceptsLines() bool {
	return b.kind == kindParagraph || b.kind == kindCode || b.kind == kindHTML
}

// canContain reports whether the block may hold a child of kind k.
func (b *block) canContain(k kind) bool {
	switch b.kind {
	case kindDocument, kindQuote, kindItem:
		return k != kindItem
	case kindList:
		return k == kindItem
	}
	return false
}

// textLine records that a line was added to a paragraph (or a heading
// that was one).
type textLine struct {
	line int
	b    *block
}

// parser holds the state of the line being read, named as in the
// specification's appendix.
type parser struct {
	doc, tip *block
	oldtip   *block
	// lastMatched is the deepest container the line continued.
	lastMatched *block
	allClosed   bool

	text           string
	offset, column int
	partialTab     bool
	nextNonspace   int
	nextNonspCol   int
	indent         int
	indented       bool
	blank          bool

	textLines []textLine
	lineNo    int
}

const codeIndent = 4

// maxDepth bounds how deep blocks nest. Every line walks the open blocks
// from the top, so unbounded nesting (a line of a million "- " followed by
// blank lines, which continue every open item) would make the work grow
// with the square of the document; past the bound a container marker is
// text. The specification sets no bound; no message a model writes comes
// near it.
const maxDepth = 32

// line incorporates one line into the tree.
func (p *parser) line(n int, text string) {
	p.lineNo = n
	p.text, p.offset, p.column, p.partialTab, p.blank = text, 0, 0, false, false
	p.oldtip = p.tip
	container := p.doc
descend:
	for container.last != nil && container.last.open {
		child := container.last
		p.findNextNonspace()
		switch p.continues(child) {
		case matched:
			container = child
		case finished:
			return
		default:
			break descend
		}
	}
	p.allClosed = container == p.oldtip
	p.lastMatched = container
	matchedLeaf := container.kind != kindParagraph && container.acceptsLines()
	for !matchedLeaf {
		p.findNextNonspace()
		if !p.indented && !maybeSpecial(p.rest()) {
			p.advanceNextNonspace()
			break
		}
		res := p.start(container)
		if res == noStart {
			p.advanceNextNonspace()
			break
		}
		container = p.tip
		if res == startedLeaf {
			matchedLeaf = true
		}
	}
	if !p.allClosed && !p.blank && p.tip.kind == kindParagraph {
		p.addLine() // a lazy continuation of the open paragraph
		return
	}
	p.closeUnmatched()
	switch {
	case container.acceptsLines():
		p.addLine()
		if container.kind == kindHTML && container.htmlType <= 5 && htmlEnds(container.htmlType, p.text[p.offset:]) {
			p.finalize(container)
		}
	case p.offset < len(p.text) && !p.blank:
		p.addChild(kindParagraph)
		p.advanceNextNonspace()
		p.addLine()
	}
}

// Results of continues.
const (
	matched   = iota // the block continues on this line
	unmatched        // it does not: it and its descendants close unless the line is lazy
	finished         // the line is consumed (a closing fence)
)

// continues says whether an open block continues on the current line,
// consuming its continuation marker or indentation.
func (p *parser) continues(b *block) int {
	switch b.kind {
	case kindQuote:
		return p.quoteContinues()
	case kindList, kindDocument:
		return matched
	case kindItem:
		return p.itemContinues(b)
	case kindParagraph:
		if p.blank {
			return unmatched
		}
		return matched
	case kindCode:
		return p.codeContinues(b)
	case kindHTML:
		if p.blank && (b.htmlType == 6 || b.htmlType == 7) {
			return unmatched
		}
		return matched
	}
	return unmatched // headings and thematic breaks hold one line
}

// quoteContinues consumes a block quote's marker: '>' and one optional
// space, at most three columns in.
func (p *parser) quoteContinues() int {
	if !p.indented && p.peek(p.nextNonspace) == '>' {
		p.advanceNextNonspace()
		p.advanceOffset(1, false)
		if isSpaceOrTab(p.peek(p.offset)) {
			p.advanceOffset(1, true)
		}
		return matched
	}
	return unmatched
}

// itemContinues consumes a list item's indentation (its marker's width and
// padding); a blank line continues an item that has content.
func (p *parser) itemContinues(b *block) int {
	switch {
	case p.blank:
		if !b.list.hasChildren {
			return unmatched // a blank line after an empty item ends it
		}
		p.advanceNextNonspace()
	case p.indent >= b.list.markerOffset+b.list.padding:
		p.advanceOffset(b.list.markerOffset+b.list.padding, true)
	default:
		return unmatched
	}
	return matched
}

// codeContinues ends a fenced block at a closing fence as long as its
// opening one, else strips the fence's indentation; an indented block
// continues on indented or blank lines.
func (p *parser) codeContinues(b *block) int {
	if b.fenced {
		if p.indent <= 3 && p.peek(p.nextNonspace) == b.fenceChar {
			if n, ok := closingFence(p.rest(), b.fenceChar); ok && n >= b.fenceLen {
				p.finalize(b)
				return finished
			}
		}
		for i := b.fenceOffset; i > 0 && isSpaceOrTab(p.peek(p.offset)); i-- {
			p.advanceOffset(1, true)
		}
		return matched
	}
	switch {
	case p.indent >= codeIndent:
		p.advanceOffset(codeIndent, true)
	case p.blank:
		p.advanceNextNonspace()
	default:
		return unmatched
	}
	return matched
}

// rest is the line from the next non-space character.
func (p *parser) rest() string { return p.text[p.nextNonspace:] }

func (p *parser) peek(i int) byte {
	if i < len(p.text) {
		return p.text[i]
	}
	return 0
}

func isSpaceOrTab(c byte) bool { return c == ' ' || c == '\t' }

// findNextNonspace measures the indentation ahead of the offset, in
// columns with tab stops of four.
func (p *parser) findNextNonspace() {
	i, cols := p.offset, p.column
	for i < len(p.text) {
		if p.text[i] == ' ' {
			i++
			cols++
		} else if p.text[i] == '\t' {
			i++
			cols += 4 - cols%4
		} else {
			break
		}
	}
	p.blank = i == len(p.text)
	p.nextNonspace, p.nextNonspCol = i, cols
	p.indent = cols - p.column
	p.indented = p.indent >= codeIndent
}

// advanceOffset moves count characters, or with columns count columns (a
// tab may then be consumed in part).
func (p *parser) advanceOffset(count int, columns bool) {
	for count > 0 && p.offset < len(p.text) {
		if p.text[p.offset] == '\t' {
			toTab := 4 - p.column%4
			if columns {
				p.partialTab = toTab > count
				adv := min(toTab, count)
				p.column += adv
				if !p.partialTab {
					p.offset++
				}
				count -= adv
			} else {
				p.partialTab = false
				p.column += toTab
				p.offset++
				count--
			}
			continue
		}
		p.partialTab = false
		p.offset++
		p.column++
		count--
	}
}

func (p *parser) advanceNextNonspace() {
	p.offset, p.column, p.partialTab = p.nextNonspace, p.nextNonspCol, false
}

// addLine adds the rest of the line to the tip (only paragraphs matter).
func (p *parser) addLine() {
	if p.tip.kind == kindParagraph {
		p.textLines = append(p.textLines, textLine{line: p.lineNo, b: p.tip})
	}
}

// addChild closes blocks until the tip can hold a k, then opens one.
func (p *parser) addChild(k kind) *block {
	for !p.tip.canContain(k) {
		p.finalize(p.tip)
	}
	b := &block{kind: k, parent: p.tip, open: true, depth: p.tip.depth + 1}
	if p.tip.kind == kindItem {
		p.tip.list.hasChildren = true
	}
	p.tip.last = b
	p.tip = b
	return b
}

func (p *parser) finalize(b *block) {
	b.open = false
	p.tip = b.parent
}

// closeUnmatched closes the blocks the line did not continue.
func (p *parser) closeUnmatched() {
	if p.allClosed {
		return
	}
	for p.oldtip != p.lastMatched {
		parent := p.oldtip.parent
		p.finalize(p.oldtip)
		p.oldtip = parent
	}
	p.allClosed = true
}
