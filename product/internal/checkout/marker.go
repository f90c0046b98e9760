package checkout

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/needle-dev/needle/product/internal/atomicfile"
	"github.com/needle-dev/needle/product/internal/procdir"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

const (
	// markerExt ends a marker's name; the checkout is the name without it.
	markerExt = ".lock"
	// maxMarker bounds what readMarker reads; a marker is one short line.
	maxMarker = 64 << 10
)

// namePattern is the only shape of checkout name Sweep will touch, so that
// a parent shared with anything else never loses a file to a sweep.
var namePattern = lazyregexp.New(`^co-[0-9a-f]{16}$`)

// marker is the content of <parent>/<name>.lock.
type marker struct {
	PID      int    `json:"pid"`
	Start    string `json:"start,omitempty"` // the creator's start time (procdir.Start); "" where unknown
	Source   string `json:"source"`          // the source repository's root
	Kind     kind   `json:"kind"`
	Snapshot string `json:"snapshot"`
}

// newName returns a fresh random checkout name.
func newName() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "co-" + hex.EncodeToString(b[:])
}

// stableName is the name a checkout of snapshot id of source takes when
// no other live checkout holds it: the same path for the same content, so
// that what a build cache keys on paths (the go command's compile actions,
// which record the source directory) is found again by the next checkout
// of the same snapshot, in this process or a later one.
func stableName(source, id string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + id))
	return "co-" + hex.EncodeToString(sum[:8])
}

// claimName tries to move the checkout named name (only its marker exists
// yet) to the name stable: it links name's marker to stable's, which fails
// when stable's exists (a live checkout, or one Sweep has yet to remove),
// and then gives it up again if something already lies at the stable path
// without a marker. On success name's marker is removed; on failure
// nothing changed and the checkout keeps name. A crash in between leaves
// whole markers of checkouts not yet made, which Sweep removes.
func claimName(parent, name, stable string) bool {
	from, to := filepath.Join(parent, name+markerExt), filepath.Join(parent, stable+markerExt)
	if err := os.Link(from, to); err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(parent, stable)); !errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(to) // never build into a directory this checkout did not make
		return false
	}
	if os.Remove(from) != nil {
		return true // two markers for one checkout: Remove deletes the one it names, Sweep the other
	}
	_ = atomicfile.SyncDir(parent)
	return true
}

// newMarker describes c as created by this process.
func newMarker(c *Checkout) (marker, error) {
	start, err := procdir.Start(os.Getpid())
	if err != nil {
		return marker{}, fmt.Errorf("own start time: %w", err)
	}
	return marker{PID: os.Getpid(), Start: start, Source: c.source, Kind: c.kind, Snapshot: c.Snapshot}, nil
}

// writeMarker writes m to path durably: temp file, fsync, rename, fsync of
// the directory. A crash leaves either no marker or a whole one, never a
// torn one Sweep could not attribute.
func writeMarker(path string, m marker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	return nil
}

// readMarker reads and checks the marker at path.
func readMarker(path string) (marker, error) {
	f, err := os.Open(path)
	if err != nil {
		return marker{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMarker))
	if err != nil {
		return marker{}, fmt.Errorf("read marker %s: %w", path, err)
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return marker{}, fmt.Errorf("read marker %s: %w", path, err)
	}
	if err := m.check(); err != nil {
		return marker{}, fmt.Errorf("read marker %s: %w", path, err)
	}
	return m, nil
}

// check rejects a marker Sweep must not act on. A pid ≤ 0 matters most:
// signal 0 to pid 0 or -1 probes a whole group, which always "lives".
func (m marker) check() error {
	switch {
	case m.PID <= 0:
		return fmt.Errorf("bad pid %d", m.PID)
	case m.Kind != kindWorktree && m.Kind != kindCopy:
		return fmt.Errorf("bad kind %q", m.Kind)
	case m.Kind == kindWorktree && !filepath.IsAbs(m.Source):
		return errors.New("worktree marker without an absolute source")
	}
	return nil
}
