// Package mdblock finds the lines of a CommonMark document that are text
// at its top level: the lines of paragraphs (and setext headings) that are
// direct children of the document, not inside a block quote, a list item,
// a code block or an HTML block. It knows nothing about what the lines
// say; the product uses it to tell a line a model meant from one it only
// showed (a fenced example, a quotation, an indented listing).
//
// # Rule
//
// The block structure is CommonMark 0.31's, computed with the two-phase
// strategy of the specification's appendix ("A parsing strategy"): each
// line first continues the open container blocks it can (block quotes by
// ">", list items by their content indentation, fenced code until its
// closing fence, indented code by four columns, HTML blocks until their
// end condition), then opens new blocks (block quote, ATX heading, fence,
// HTML block, setext underline, thematic break, list item, indented code,
// in that order), and what remains is paragraph text — a lazy
// continuation line of an open paragraph inside a container stays in
// that container. Tabs count to the next multiple of four columns. Lines
// end at LF, CR LF or a lone CR.
//
// Containers nest at most 32 blocks deep (deeper block quote and list
// markers are text), which keeps the work linear in the size of the
// document; the specification sets no bound, and no message comes near it.
//
// Inline structure is not parsed (a code span or emphasis does not change
// which block a line is in), and link reference definitions are not
// recognised: their lines count as paragraph text. Text lines of a
// paragraph that a setext underline turns into a heading stay text lines.
//
// The tests compare the result with an independent CommonMark parser
// (github.com/yuin/goldmark, test-only) over generated documents.
//
// # Files
//
//	block.go   Lines: the block parser and its result
//	start.go   the block starts: markers, fences, HTML block conditions
package mdblock
