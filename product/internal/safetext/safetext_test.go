package safetext

import (
	"strings"
	"testing"
)

func TestGitAlias(t *testing.T) {
	for _, c := range []string{".git", ".GIT", ".Git", ".git.", ".git ", ".git. .", ".git\u200d", ".g\u200cit", "\ufeff.git",
		".git\u200f", ".git::$INDEX_ALLOCATION", ".git:$DATA", ".GIT:x", "git~1", "GIT~2", "Git~10", "\u202e.git"} {
		if !GitAlias(c) {
			t.Errorf("GitAlias(%q) = false", c)
		}
	}
	for _, c := range []string{"git", ".gitignore", ".github", "git~", "git~a", "x.git", ".gi t", "gitx~1", ".git-x", "a:b"} {
		if GitAlias(c) {
			t.Errorf("GitAlias(%q) = true", c)
		}
	}
}

func TestCheckRepoPath(t *testing.T) {
	for _, p := range []string{".", "a.go", "cmd/x/main.go", ".github/workflows/ci.yml", "café.txt", "cafe\u0301.txt", "a:b.txt", "界/界.go"} {
		if err := CheckRepoPath(p); err != nil {
			t.Errorf("CheckRepoPath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", "a/", "./a", `a\b`, "a\x00b", "a\u0007b.go",
		"a\u202eog.txt", "a\u200bb", "a\u2028b", "a\u0085b", "x/.git/config", ".git\u200d/config", "GIT~2/config",
		".git::$INDEX_ALLOCATION/config", "a/.GIT./hooks", "\xff"} {
		if err := CheckRepoPath(p); err == nil {
			t.Errorf("CheckRepoPath(%q) accepted", p)
		}
	}
}

func TestCheckText(t *testing.T) {
	if err := CheckText("line one\n\tline two — ünïcode 界", true); err != nil {
		t.Errorf("multi-line text: %v", err)
	}
	for _, s := range []string{"fix\u0000 it", "fix \u202eit", "\u001b[31mred\u001b[0m", "a\u2029b", "a\u0085b", "a\u200eb", "a\xffb", "a\rb"} {
		if err := CheckText(s, true); err == nil {
			t.Errorf("CheckText(%q) accepted", s)
		}
	}
	if err := CheckText("a\nb", false); err == nil {
		t.Error("a newline in one-line text was accepted")
	}
}

// FuzzCheckRepoPath holds the path rule as a property, against oracles
// written apart from it: whatever is accepted is valid UTF-8 with no
// control, format or separator character, no backslash, is clean and
// relative, and no component is .git once HFS+'s ignorable code points are
// dropped, case is folded and NTFS's trailing dots, spaces and stream
// suffix are cut — nor an 8.3 GIT~N.
func FuzzCheckRepoPath(f *testing.F) {
	for _, s := range []string{"a.go", ".git", ".g\u200cit/x", "GIT~2/config", ".git::$INDEX_ALLOCATION", "a\u202eb", "café/x", "a/b/../c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckRepoPath(p) != nil || p == "." {
			return
		}
		for _, r := range p {
			if r < 0x20 || r >= 0x7f && r < 0xa0 || r == '\\' || r == '\u2028' || r == '\u2029' {
				t.Fatalf("accepted %q with %U", p, r)
			}
			if strings.ContainsRune("\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff", r) {
				t.Fatalf("accepted %q with the format character %U", p, r)
			}
		}
		for _, c := range strings.Split(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("accepted the unclean path %q", p)
			}
			folded := strings.Map(func(r rune) rune {
				switch {
				case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
					return -1
				}
				return r
			}, strings.ToLower(c))
			base, _, _ := strings.Cut(folded, ":")
			base = strings.TrimRight(base, ". ")
			short := strings.HasPrefix(base, "git~") && len(base) > 4 && strings.Trim(base[4:], "0123456789") == ""
			if base == ".git" || short {
				t.Fatalf("accepted %q, whose component %q is .git on some file system", p, c)
			}
		}
	})
}
