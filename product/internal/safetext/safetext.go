// Package safetext holds the rules for untrusted text and repository paths
// that Needle stores, shows or acts on: what may be in them, whatever the
// surface they came through.
//
// Text is refused, never cleaned into something else: a character that
// could change how a line reads (a C0 or C1 control, a Unicode format
// character — bidi controls, zero-width joiners, the byte order mark — or a
// line or paragraph separator) has no place in a task, a criterion or a
// path. Multi-line text may hold "\n" and "\t" and nothing else of the kind.
//
// A repository path must also never name git metadata on any file system a
// clone of the repository may be checked out on. Git's own checks are the
// model (is_hfs_dotgit, is_ntfs_dotgit in git's path.c and utf8.c): HFS+
// ignores some code points and folds case, so ".g\u200cit" and ".GIT" are
// ".git"; NTFS drops trailing dots and spaces, reads "name:stream" as a
// stream of name (".git::$INDEX_ALLOCATION" is the directory .git), and
// answers to 8.3 short names ("GIT~1", and "GIT~2" when the first is taken).
package safetext

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// UnsafeRune reports a character that could change how a line of text
// reads: C0 and C1 controls, format characters (bidi controls, zero-width
// joiners, the byte order mark) and line or paragraph separators.
func UnsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// CheckText refuses text that is not valid UTF-8 or holds an unsafe
// character; multi-line text may hold "\n" and "\t".
func CheckText(s string, multiline bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	for i, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if UnsafeRune(r) {
			return fmt.Errorf("contains the %s character %U at byte %d", runeClass(r), r, i)
		}
	}
	return nil
}

// runeClass names what kind of unsafe character r is.
func runeClass(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "control"
	case unicode.Is(unicode.Cf, r):
		return "format (bidi or zero-width)"
	}
	return "line-separator"
}

// PathError is a path the repository-path rule refuses, and why.
type PathError struct {
	Path   string
	Reason string // "git metadata (…)", "contains a backslash", …
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// CheckRepoPath refuses (with a *PathError) a path that is not a clean,
// relative, slash-separated path inside a repository, that holds an unsafe
// character or a backslash, or that has a component naming git metadata on
// some file system (see GitAlias). "." (the repository itself) is accepted.
func CheckRepoPath(p string) error {
	refuse := func(format string, args ...any) error {
		return &PathError{Path: p, Reason: fmt.Sprintf(format, args...)}
	}
	if err := CheckText(p, false); err != nil {
		return refuse("%v", err)
	}
	switch {
	case p == "":
		return refuse("is empty")
	case p == ".":
		return nil
	case strings.Contains(p, `\`):
		return refuse("contains a backslash")
	case strings.HasPrefix(p, "/"):
		return refuse("is not relative")
	case path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return refuse("is not clean and inside the repository")
	}
	for _, c := range strings.Split(p, "/") {
		if GitAlias(c) {
			return refuse("git metadata (%q is .git on some file system)", c)
		}
	}
	return nil
}

// GitAlias reports whether a path component is .git, or is read as .git by
// HFS+ (ignorable code points dropped, case folded) or NTFS (trailing dots
// and spaces dropped, a ":stream" suffix, 8.3 short names GIT~N).
func GitAlias(component string) bool {
	var b strings.Builder
	for _, r := range component {
		if !hfsIgnorable(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	name := b.String()
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i] // NTFS: "name:stream" and "name::$TYPE" are name
	}
	name = strings.TrimRight(name, ". ")
	if name == ".git" {
		return true
	}
	digits, ok := strings.CutPrefix(name, "git~")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// hfsIgnorable is a code point HFS+ ignores in names (git's next_hfs_char).
func hfsIgnorable(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// Clip bounds s to max bytes without splitting a character.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "")
}
