//go:build linux

package testscripts

// Issue 12 item 18: failures of the machine Needle runs on (a full or
// read-only file system, a corrupt repository) are told as such.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// Issue 12 item 18 (git): a git failure reaches the user as a sentence about
// the repository, not as git's raw output with Needle's internal command
// line. The fixture's index is corrupt.
func TestHarden_GitFailuresAreExplained(t *testing.T) {
	repo, data := storeRepo(t)
	if err := os.WriteFile(filepath.Join(repo, ".git", "index"), []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, r := propose(t, repo, data, openLocation)
	if r.code == 0 {
		t.Fatalf("a repository with a corrupt index: exit 0")
	}
	t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if strings.Contains(r.stderr, "exit status") || strings.Contains(r.stderr, "check-ignore -q") || !strings.Contains(r.stderr, "index") {
		t.Errorf("the message is git's raw output: %q", r.stderr)
	}
}

// fsResult is what the file-system helper reports.
type fsResult struct {
	Setup  string `json:"setup"` // a failure preparing the file system
	Code   int    `json:"code"`
	Stderr string `json:"stderr"`
}

// Issue 12 item 18 (store): a full disk and a read-only file system are
// told as such, naming the data directory, not as SQLite result codes. The
// file systems are tmpfs mounts in a user and mount namespace of their own
// (see TestHardenHelperFileSystem), so no privilege is needed.
func TestHarden_StoreFailuresAreExplained(t *testing.T) {
	for _, c := range []struct {
		mode string
		want *regexp.Regexp
	}{
		{"full", regexp.MustCompile(`(?i)no space|is full|disk full`)},
		{"readonly", regexp.MustCompile(`(?i)read-only`)},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHardenHelperFileSystem$")
			cmd.Env = append(os.Environ(), "NEEDLE_HARDEN_FS="+c.mode, "NEEDLE_HARDEN_DIR="+dir, "NEEDLE_HARDEN_BIN="+needlePath(t))
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("file-system helper: %v\n%s", err, out)
			}
			var res fsResult
			b, err := os.ReadFile(filepath.Join(dir, "result.json"))
			if err == nil {
				err = json.Unmarshal(b, &res)
			}
			if err != nil || res.Setup != "" {
				t.Fatalf("file-system helper: %v %s", err, res.Setup)
			}
			msg := strings.TrimSpace(res.Stderr)
			t.Logf("%s: exit %d: %s", c.mode, res.Code, msg)
			if res.Code == 0 || !c.want.MatchString(msg) || !strings.Contains(msg, "data") || regexp.MustCompile(`\(\d+\)$`).MatchString(msg) {
				t.Errorf("%s: exit %d, %q; want a failure that says %s and names the data directory, without a bare SQLite code", c.mode, res.Code, msg, c.want)
			}
		})
	}
}

// TestHardenHelperFileSystem is not a test: TestHarden_StoreFailuresAreExplained
// runs this binary with NEEDLE_HARDEN_FS set, in namespaces where it may
// mount. It mounts a small tmpfs, creates a store and a repository on it,
// makes the file system full or read-only, runs `needle evidence propose`
// and writes what happened to NEEDLE_HARDEN_DIR/result.json.
func TestHardenHelperFileSystem(t *testing.T) {
	mode := os.Getenv("NEEDLE_HARDEN_FS")
	if mode == "" {
		return
	}
	dir, bin := os.Getenv("NEEDLE_HARDEN_DIR"), os.Getenv("NEEDLE_HARDEN_BIN")
	res := fsHelper(mode, dir, bin)
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fsHelper(mode, dir, bin string) fsResult {
	fail := func(format string, args ...any) fsResult { return fsResult{Setup: fmt.Sprintf(format, args...)} }
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fail("make mounts private: %v", err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return fail("%v", err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		return fail("mount tmpfs: %v", err)
	}
	repo, data := filepath.Join(mnt, "repo"), filepath.Join(mnt, "data")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return fail("%v", err)
	}
	if err := os.WriteFile(filepath.Join(repo, "store.go"), []byte(storeGo), 0o644); err != nil {
		return fail("%v", err)
	}
	if out, err := exec.Command(bin, "db", "check", "--data-dir", data).CombinedOutput(); err != nil {
		return fail("create the store: %v %s", err, out)
	}
	switch mode {
	case "full":
		f, err := os.Create(filepath.Join(mnt, "fill"))
		if err != nil {
			return fail("%v", err)
		}
		block := make([]byte, 4096)
		for {
			if _, err := f.Write(block); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return fail("fill: %v", err)
				}
				break
			}
		}
		f.Close()
	case "readonly":
		if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fail("remount read-only: %v", err)
		}
	default:
		return fail("unknown mode %q", mode)
	}
	cmd := exec.Command(bin, "evidence", "propose", "--repository", repo, "--data-dir", data, "-")
	cmd.Stdin = strings.NewReader(openLocation)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return fail("run needle: %v", err)
	}
	return fsResult{Code: code, Stderr: stderr.String()}
}
