package testscripts

import (
	"os"
	"strings"
	"testing"
)

// Issue 12 item 22: a file rewritten through a shared mmap can keep its
// size, mtime, ctime and inode, so the stat cache (like git's index) trusts
// the old digest. No fix is required, but the limit is documented beside
// git's racy-clean rule, where a reader of the freshness rules looks.
func TestHarden_SharedMmapLimitIsDocumented(t *testing.T) {
	for _, doc := range []string{"../product/internal/snapshot/doc.go"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "mmap") {
			t.Errorf("%s does not say that a write through a shared mmap can keep a file's stat (git's same limit)", doc)
		}
	}
}
