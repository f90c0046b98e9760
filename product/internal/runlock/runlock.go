// Package runlock is the profile lock: at most one resident runtime per data
// directory. It knows nothing about what the runtime serves; it takes a lock
// file path and a holder record to publish.
//
// # Mechanism
//
// Acquire opens the lock file (creating it 0600) and takes an exclusive,
// non-blocking flock of it. The kernel releases a flock when its last
// descriptor closes, so a runtime that crashes, is killed with SIGKILL or
// loses its machine leaves no lock behind: the next Acquire simply gets it.
// What a crash does leave is the holder record in the file and whatever the
// runtime had created beside it (its IPC socket); Lock.Previous returns that
// record so the new holder can clean up after a holder that is known gone.
//
// The holder record (JSON: pid, start time, acquisition time, endpoints) is
// rewritten in place — truncate, write, fsync — never by rename: the flock
// belongs to the file's inode, and replacing the inode would let a second
// process lock a different file under the same name. For the same reason
// the file is never deleted: unlinking a lock file while another process
// has it open lets two processes hold "the" lock at once.
//
// # Failing closed
//
// A second Acquire, in this process or another, fails with a *HeldError
// (errors.Is ErrHeld) naming the holder from its record: its pid, when it
// took the lock and where it listens. If the flock is granted but the
// record names another process that is provably alive (same pid and start
// time), the file system is not honouring flock (some network file systems
// do not) and Acquire refuses too rather than start a second runtime beside
// a live one.
package runlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/procdir"
)

// ErrHeld is the class of errors Acquire returns when another holder has
// the lock.
var ErrHeld = errors.New("held by another runtime")

// maxRecord bounds the holder record read from disk.
const maxRecord = 16 << 10

// Holder is the record a lock holder publishes in the lock file.
type Holder struct {
	procdir.ID
	// Since is when the holder acquired the lock.
	Since time.Time `json:"since"`
	// Endpoints are where the holder can be reached (URLs, socket names),
	// published once it listens; informative only.
	Endpoints []string `json:"endpoints,omitempty"`
}

// String spells h for a person: "pid 42 since 2026-01-02T03:04:05Z at http://127.0.0.1:4000".
func (h Holder) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d", h.PID)
	if !h.Since.IsZero() {
		fmt.Fprintf(&b, " since %s", h.Since.UTC().Format(time.RFC3339))
	}
	if len(h.Endpoints) > 0 {
		fmt.Fprintf(&b, " at %s", strings.Join(h.Endpoints, ", "))
	}
	return b.String()
}

// HeldError reports a lock that another runtime holds.
type HeldError struct {
	Path string
	// Holder is the holder's record; zero when it could not be read (a
	// holder between lock and first write, or a torn record).
	Holder Holder
	// Unlocked is set when the flock was granted but the record names a live
	// process: the file system does not honour flock.
	Unlocked bool
}

func (e *HeldError) Error() string {
	who := "another runtime (no readable holder record)"
	if e.Holder.PID > 0 {
		who = "another runtime, " + e.Holder.String()
	}
	if e.Unlocked {
		return fmt.Sprintf("profile lock %s: record names live %s, yet the lock was free: this file system does not honour flock; refusing to run beside it", e.Path, who)
	}
	return fmt.Sprintf("profile lock %s: held by %s", e.Path, who)
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held profile lock.
type Lock struct {
	path     string
	previous *Holder

	mu     sync.Mutex
	f      *os.File // nil once released
	holder Holder
}

// Acquire takes the lock file at path for the calling process, or fails
// with a *HeldError when another holder has it. now stamps Holder.Since.
func Acquire(path string, now time.Time) (*Lock, error) {
	self, err := procdir.Self()
	if err != nil {
		return nil, fmt.Errorf("profile lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("profile lock: %w", err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("profile lock %s: %w", path, err)
	}
	prev, _ := readRecord(f) // a torn or empty record is no holder
	if !locked {
		f.Close()
		return nil, &HeldError{Path: path, Holder: prev}
	}
	if prev.PID > 0 && prev.ID != self && prev.ID.Alive() {
		f.Close()
		return nil, &HeldError{Path: path, Holder: prev, Unlocked: true}
	}
	l := &Lock{path: path, f: f, holder: Holder{ID: self, Since: now.UTC()}}
	if prev.PID > 0 {
		l.previous = &prev
	}
	if err := l.write(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// Previous returns the record a former holder left behind — a holder that
// is gone, since the lock was free — or nil when the file held none. Its
// owner may remove what that holder created (a stale socket).
func (l *Lock) Previous() *Holder { return l.previous }

// Holder returns the record this lock publishes.
func (l *Lock) Holder() Holder {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.holder
	h.Endpoints = append([]string(nil), h.Endpoints...)
	return h
}

// Publish replaces the endpoints in the holder record, for a second
// Acquire's message.
func (l *Lock) Publish(endpoints ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("profile lock %s: released", l.path)
	}
	l.holder.Endpoints = append([]string(nil), endpoints...)
	return l.writeLocked()
}

// Release empties the holder record and releases the lock. It is safe to
// call more than once.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr // closing the only descriptor releases the flock
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("release profile lock %s: %w", l.path, err)
	}
	return nil
}

func (l *Lock) write() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked()
}

// writeLocked rewrites the record in place (see the package doc: never by
// rename).
func (l *Lock) writeLocked() error {
	data, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	err = l.f.Truncate(0)
	if err == nil {
		_, err = l.f.WriteAt(data, 0)
	}
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("write profile lock %s: %w", l.path, err)
	}
	return nil
}

// readRecord reads the holder record of f; an empty or unreadable record is
// a zero Holder and an error.
func readRecord(f *os.File) (Holder, error) {
	data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, maxRecord), maxRecord))
	if err != nil {
		return Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return Holder{}, err
	}
	if h.PID <= 0 {
		return Holder{}, errors.New("holder record without pid")
	}
	return h, nil
}
