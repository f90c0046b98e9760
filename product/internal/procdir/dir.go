package procdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// self is this process's pid and start time, read once.
var self = sync.OnceValues(func() (string, error) {
	id, err := Self()
	if err != nil {
		return "", err
	}
	owner := strconv.Itoa(id.PID)
	if id.Start != "" {
		owner += "." + id.Start
	}
	return owner, nil
})

// Make creates a private directory (mode 0700) in parent, creating parent if
// need be, named <tag>-<pid>[.<start>]-<random>: its owner is the calling
// process, and Sweep removes it once that process is gone. tag must be
// non-empty and hold no "-".
func Make(parent, tag string) (string, error) {
	if tag == "" || strings.Contains(tag, "-") {
		return "", fmt.Errorf("procdir: bad tag %q", tag)
	}
	owner, err := self()
	if err != nil {
		return "", err
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	dir := filepath.Join(parent, tag+"-"+owner+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// Sweep removes every directory of parent that Make made for a process that
// is gone. Entries of any other shape are left alone, so parent may be
// shared; a missing parent has nothing to sweep.
func Sweep(parent string) error {
	dead, err := Dead(parent)
	if err != nil {
		return err
	}
	for _, dir := range dead {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}

// Dead returns the directories of parent that Make made for a process
// that is gone: what Sweep removes. A missing parent holds none.
func Dead(parent string) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dead []string
	for _, e := range entries {
		pid, start, ok := owner(e.Name())
		if !ok || Alive(pid, start) {
			continue
		}
		dead = append(dead, filepath.Join(parent, e.Name()))
	}
	return dead, nil
}

// owner parses the owner out of a name Make gave: <tag>-<pid>[.<start>]-<random>.
func owner(name string) (pid int, start string, ok bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return 0, "", false
	}
	p, start, _ := strings.Cut(parts[1], ".")
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, start, true
}
