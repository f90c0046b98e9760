package product

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/safetext"
	"github.com/needle-dev/needle/product/internal/strictjson"
)

// Untrusted text. What the product shows from untrusted or unbounded
// sources (a worker's report, an error, a task) is cut to a size, never
// mid-character and never mid-line where lines are the unit; JSON a model
// or a user wrote is decoded strictly.

// oneLine puts a message on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// clipLines bounds text to budget bytes at a line boundary, marking the
// cut with a last line "…".
func clipLines(s string, budget int) string {
	if len(s) <= budget {
		return s
	}
	cut := strings.LastIndexByte(s[:budget], '\n')
	if cut < 0 {
		cut = 0
	}
	return s[:cut+1] + "…\n"
}

// clip bounds s to max bytes without splitting a character.
func clip(s string, max int) string { return safetext.Clip(s, max) }

// decodeStrict decodes one JSON value into v with no unknown fields and
// nothing after it: for JSON the product reads from a model or a user into
// a Go type (a worker's report, a verdict, a profile body).
func decodeStrict(data []byte, v any) error { return strictjson.Decode(data, v) }

// showPath is a path as a reason may print it: quoted when it is not plain
// printable UTF-8.
func showPath(p string) string {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) || r == '\\' }) {
		return strconv.Quote(p)
	}
	return p
}

func showPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = showPath(p)
	}
	return out
}

// namePaths names paths in a message, at most a bounded number of them.
func namePaths(paths []string) string {
	const most = 32
	if len(paths) <= most {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:most], ", "), len(paths)-most)
}
