package procdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// deadProcess returns the pid and start time of a process that has exited
// and been reaped.
func deadProcess(t *testing.T) (int, string) {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := Start(cmd.Process.Pid)
	if err != nil {
		start = "" // it may have exited already
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, start
}

func TestMakeAndSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatal("procdir tells dead processes apart on linux only; Needle runs on linux")
	}
	parent := filepath.Join(t.TempDir(), "homes")
	mine, err := Make(parent, "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(mine); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("Make: %v, %v; want a 0700 directory", info, err)
	}
	pid, _ := deadProcess(t)
	dead := filepath.Join(parent, "aaaa-"+strconv.Itoa(pid)+"-0000")
	// The same pid as ours but another start time: a process that reused
	// our pid in an earlier life (a container restart) is gone.
	ownStart, _ := Start(os.Getpid())
	reused := filepath.Join(parent, "bbbb-"+strconv.Itoa(os.Getpid())+"."+ownStart+"9-0000")
	other := filepath.Join(parent, "not-ours") // another shape: never touched
	file := filepath.Join(parent, "cccc-1-x")  // pid 1 lives
	for _, d := range []string{dead, reused, other, file} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := Sweep(parent); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{mine: true, dead: false, reused: false, other: true, file: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	if err := Sweep(filepath.Join(parent, "missing")); err != nil {
		t.Errorf("Sweep of a missing parent: %v", err)
	}
}

func TestMake_BadTag(t *testing.T) {
	for _, tag := range []string{"", "a-b"} {
		if _, err := Make(t.TempDir(), tag); err == nil {
			t.Errorf("Make(%q) succeeded", tag)
		}
	}
}

func TestAlive(t *testing.T) {
	start, err := Start(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(os.Getpid(), start) || !Alive(os.Getpid(), "") {
		t.Error("this process is not alive")
	}
	if Alive(os.Getpid(), start+"1") {
		t.Error("another start time under our pid is alive")
	}
	if pid, _ := deadProcess(t); Alive(pid, "") {
		t.Error("a reaped process is alive")
	}
	if !Alive(0, "") || !Alive(-1, "") {
		t.Error("pid 0 or -1 is not alive: a sweep could act on it")
	}
}

func TestID(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() || self.Start == "" {
		t.Fatalf("Self() = %+v, want pid %d with a start time", self, os.Getpid())
	}
	if !self.Alive() {
		t.Errorf("%v is not alive", self)
	}
	if reused := (ID{PID: self.PID, Start: self.Start + "0"}); reused.Alive() {
		t.Errorf("%v is alive although the pid names a process started at %s", reused, self.Start)
	}
	pid, start := deadProcess(t)
	if dead := (ID{PID: pid, Start: start}); dead.Alive() {
		t.Errorf("%v is alive after it was reaped", dead)
	}
	if got := (ID{PID: 42, Start: "7"}).String(); got != "pid 42 (start 7)" {
		t.Errorf("String() = %q", got)
	}
}
