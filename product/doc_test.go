package product

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocFileMap keeps the file map at the end of doc.go true: every source
// file of the package is in it (by name or by a pattern such as
// store_*.go), and every name and pattern in it matches a file.
func TestDocFileMap(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Files")
	if !ok {
		t.Fatal("doc.go has no # Files section")
	}
	entry := regexp.MustCompile(`(?m)^//\t([a-z_*]+\.go)\s`)
	var patterns []string
	for _, m := range entry.FindAllStringSubmatch(section, -1) {
		patterns = append(patterns, m[1])
	}
	if len(patterns) < 10 {
		t.Fatalf("found %d entries in the file map: %v", len(patterns), patterns)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		mapped := false
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, f); ok {
				mapped, used[p] = true, true
			}
		}
		if !mapped {
			t.Errorf("%s is not in the file map of doc.go", f)
		}
	}
	for _, p := range patterns {
		if !used[p] {
			t.Errorf("the file map of doc.go names %s, which matches no file", p)
		}
	}
}
