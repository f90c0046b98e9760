package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/atomicfile"
)

// Baselines outlive the process: a baseline (the test binary run with no
// test: what package initialization and TestMain cover) is kept by its
// baseKey — the binary's digest and Spec.Snapshot — in
// CacheDir/baselines, so a later process running the same binary on the
// same snapshot (another needle command, a new data directory sharing the
// test cache) does not run it again. Only Needle writes there, outside the
// sandbox; what is read back goes through ParseProfile like any profile,
// and one that does not parse, or names another key, is ignored.

// storedBaseline is a baseline's file: its key, and the profile in the
// go command's text format.
type storedBaseline struct {
	Key     string `json:"key"`
	Profile string `json:"profile"`
}

func (r *Runner) baselinePath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(r.CacheDir, "baselines", hex.EncodeToString(sum[:16])+".json")
}

// loadBaseline returns the baseline a Runner stored under key, nil for
// none.
func (r *Runner) loadBaseline(key string) *Profile {
	data, err := os.ReadFile(r.baselinePath(key))
	if err != nil || len(data) > maxProfileBytes {
		return nil
	}
	var sb storedBaseline
	if json.Unmarshal(data, &sb) != nil || sb.Key != key {
		return nil
	}
	p, err := ParseProfile(strings.NewReader(sb.Profile))
	if err != nil {
		return nil
	}
	return p
}

// storeBaseline keeps p under key for later processes; a failure to write
// loses only that (the next process runs the baseline).
func (r *Runner) storeBaseline(key string, p *Profile) {
	data, err := json.Marshal(storedBaseline{Key: key, Profile: p.text()})
	if err != nil {
		return
	}
	path := r.baselinePath(key)
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = atomicfile.Replace(path, data, 0o644)
	}
}

// text is p in the go command's profile format, which ParseProfile reads.
func (p *Profile) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\n", p.Mode)
	for _, bl := range p.Blocks {
		fmt.Fprintf(&b, "%s:%d.%d,%d.%d %d %d\n", bl.File, bl.StartLine, bl.StartCol, bl.EndLine, bl.EndCol, bl.NumStmt, bl.Count)
	}
	return b.String()
}
