package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/atomicfile"
)

// Test binaries outlive the process too. A binary the go command built
// is also linked into CacheDir/testbins under its binKey and the build's
// arguments, with its digest beside it, so that a later process running a
// test of the same package on the same source at the same checkout path
// (checkouts of a snapshot take a stable path) links it into its own
// binary directory instead of linking it again; it is digested there and
// used only if the digest is the one stored. Only Needle writes
// CacheDir/testbins, outside the sandbox. At most maxSharedBinaries are
// kept, the least recently used removed first; a process that linked one
// holds its own link, so a removal never pulls a binary from under a run.

// maxSharedBinaries bounds the binaries kept in CacheDir/testbins.
const maxSharedBinaries = 48

// sharedBinary is a kept binary's record.
type sharedBinary struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// sharedKey names the kept binary of key built with args.
func sharedKey(key string, args []string) string {
	sum := sha256.Sum256([]byte("testbin.v1\x00" + key + "\x00" + strings.Join(args, "\x00")))
	return hex.EncodeToString(sum[:16])
}

func (r *Runner) sharedBinDir() string { return filepath.Join(r.CacheDir, "testbins") }

// linkShared links the binary kept under skey to out and returns its
// digest, checked; "" when there is none or it does not check.
func (r *Runner) linkShared(skey, out string) string {
	base := filepath.Join(r.sharedBinDir(), skey)
	data, err := os.ReadFile(base + ".json")
	if err != nil {
		return ""
	}
	var sb sharedBinary
	if json.Unmarshal(data, &sb) != nil || sb.Key != skey || sb.Digest == "" {
		return ""
	}
	_ = os.Remove(out)
	if os.Link(base+".test", out) != nil {
		return ""
	}
	if d, err := fileDigest(out); err != nil || d != sb.Digest {
		_ = os.Remove(out)
		return ""
	}
	now := time.Now()
	_ = os.Chtimes(base+".json", now, now) // recently used
	return sb.Digest
}

// keepShared keeps the binary at out, of digest, under skey for later
// processes, and removes the least recently used past maxSharedBinaries.
// Failing loses only that: a later process builds it.
func (r *Runner) keepShared(skey, out, digest string) {
	dir := r.sharedBinDir()
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	base := filepath.Join(dir, skey)
	tmp := filepath.Join(dir, fmt.Sprintf(".link-%d-%d", os.Getpid(), time.Now().UnixNano())) // linked, then renamed into place
	if os.Link(out, tmp) != nil {
		return
	}
	if os.Rename(tmp, base+".test") != nil {
		_ = os.Remove(tmp)
		return
	}
	data, _ := json.Marshal(sharedBinary{Key: skey, Digest: digest})
	if atomicfile.Replace(base+".json", data, 0o644) != nil {
		return
	}
	r.evictShared(dir)
}

// evictShared removes the least recently used kept binaries past
// maxSharedBinaries (by their record's time).
func (r *Runner) evictShared(dir string) {
	records, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(records) <= maxSharedBinaries {
		return
	}
	type aged struct {
		base string
		at   time.Time
	}
	var all []aged
	for _, rec := range records {
		if fi, err := os.Stat(rec); err == nil {
			all = append(all, aged{strings.TrimSuffix(rec, ".json"), fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return a.at.Compare(b.at) })
	for _, a := range all[:max(0, len(all)-maxSharedBinaries)] {
		_ = os.Remove(a.base + ".json") // the record first: a binary without one is never used
		_ = os.Remove(a.base + ".test")
	}
}
