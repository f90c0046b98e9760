//go:build linux

package threadprio

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// niceOf reads a thread's nice value from /proc (field 19 of its stat),
// an account independent of the syscalls Lower makes.
func niceOf(tid int) (int, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // field 3 on
	return strconv.Atoi(fields[19-3])
}

// TestLower lowers a goroutine's thread and checks, through /proc, that
// that thread's nice value went up by the delta and that the test's own
// thread kept its own.
func TestLower(t *testing.T) {
	type result struct {
		tid, before int
		err         error
		ok          bool
	}
	got := make(chan result)
	hold := make(chan struct{})
	go func() {
		var r result
		r.before, r.err = niceOf(syscall.Gettid())
		r.ok = Lower(5)
		r.tid = syscall.Gettid() // locked now: the thread Lower lowered
		got <- r
		<-hold // keep the thread while the test reads it
	}()
	r := <-got
	defer close(hold)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.ok {
		t.Fatal("Lower reported it could not lower the priority")
	}
	want := min(r.before+5, 19)
	if after, err := niceOf(r.tid); err != nil || after != want {
		t.Errorf("the lowered thread's nice is %d (%v), want %d", after, err, want)
	}
	own := syscall.Gettid()
	if own == r.tid {
		t.Fatal("the test runs on the lowered thread, which only its goroutine may use")
	}
	if n, err := niceOf(own); err != nil || n != r.before {
		t.Errorf("another thread's nice is %d (%v), want it unchanged at %d", n, err, r.before)
	}
}
