package testrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Limits bound what the code a run executes may take, on top of the
// deadline: each process of the sandbox gets them as resource limits
// before the test binary (or a scenario's command) starts. A zero field
// takes its default (DefaultLimits).
type Limits struct {
	// Processes bounds the processes (and, where the kernel counts them,
	// threads) living in the sandbox at once: RLIMIT_NPROC, which Linux
	// does not enforce for root, and a watchdog in the sandbox that stops
	// everything when more processes than this run.
	Processes int
	// AddressSpace bounds each process's virtual memory in bytes
	// (RLIMIT_AS): an allocation past it fails (a Go program dies "out of
	// memory").
	AddressSpace int64
	// FileSize bounds each file a process writes, in bytes (RLIMIT_FSIZE):
	// a write past it fails (EFBIG).
	FileSize int64
	// CPU bounds each process's CPU time (RLIMIT_CPU); zero: twice the
	// run's deadline, so only a process spinning on several cores for
	// most of it is stopped.
	CPU time.Duration
}

// DefaultLimits are limits a real module's tests run under (the go
// command, which builds outside the sandbox, is not bound by them): a Go
// test binary reserves about 1.2 GiB of address space before it
// allocates anything.
var DefaultLimits = Limits{Processes: 256, AddressSpace: 4 << 30, FileSize: 1 << 30}

// limits is l with its defaults for a run of deadline.
func (l Limits) limits(deadline time.Duration) Limits {
	if l.Processes <= 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.AddressSpace <= 0 {
		l.AddressSpace = DefaultLimits.AddressSpace
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultLimits.FileSize
	}
	if l.CPU <= 0 {
		l.CPU = 2 * deadline
	}
	return l
}

// args are the launcher's arguments for l, up to and including "--".
func (l Limits) args() []string {
	return []string{strconv.Itoa(l.Processes), strconv.FormatInt(l.AddressSpace, 10), strconv.FormatInt(l.FileSize, 10),
		strconv.FormatInt(int64((l.CPU+time.Second-1)/time.Second), 10), "--"}
}

// limitMarker starts every line the launcher writes: why it stopped the
// sandbox, or why it could not start. The test's own output could hold
// the same text; it can only make its own run fail.
const limitMarker = "needle-sandbox: "

// launcherSource is the launcher: the first program of every sandboxed
// command. Inside the sandbox (so RLIMIT_NPROC counts the sandbox's own
// user namespace, not the user's other processes) it sets the resource
// limits on itself, starts the command, which inherits them, and watches
// the sandbox's PID namespace (its /proc): past the process limit it
// kills every process it can (kill(-1), which stays inside the namespace)
// and says so. It exits with the command's status (128+signal for a
// signal), after naming a limit that killed it. Any failure to set a
// limit stops it before the command starts: nothing runs unbounded.
const launcherSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

const rlimitNproc = 6 // RLIMIT_NPROC on Linux

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "needle-sandbox: "+format+"\n", args...)
	os.Exit(125)
}

func main() {
	if len(os.Args) < 7 || os.Args[5] != "--" {
		fail("usage: launch PROCESSES ADDRESS_SPACE FILE_SIZE CPU_SECONDS -- COMMAND...")
	}
	var v [4]uint64
	for i := range v {
		n, err := strconv.ParseUint(os.Args[1+i], 10, 64)
		if err != nil || n == 0 {
			fail("bad limit %q", os.Args[1+i])
		}
		v[i] = n
	}
	procs, as, fsize, cpu := v[0], v[1], v[2], v[3]
	for _, l := range []struct {
		res  int
		v    uint64
		name string
	}{{rlimitNproc, procs, "processes"}, {syscall.RLIMIT_AS, as, "address space"}, {syscall.RLIMIT_FSIZE, fsize, "file size"}, {syscall.RLIMIT_CPU, cpu, "CPU time"}} {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			fail("cannot limit %s: %v", l.name, err)
		}
	}
	cmd := exec.Command(os.Args[6], os.Args[7:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fail("start %s: %v", os.Args[6], err)
	}
	var tooMany atomic.Bool
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			if n := processes(); n > int(procs) {
				tooMany.Store(true)
				fmt.Fprintf(os.Stderr, "\nneedle-sandbox: stopped: more than %d processes (%d)\n", procs, n)
				syscall.Kill(-1, syscall.SIGKILL)
				return
			}
		}
	}()
	err := cmd.Wait()
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case tooMany.Load():
		os.Exit(125)
	case err == nil:
		os.Exit(0)
	case st.Signaled():
		used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		switch {
		case st.Signal() == syscall.SIGXFSZ:
			fmt.Fprintf(os.Stderr, "\nneedle-sandbox: stopped: file size limit (%d bytes)\n", fsize)
		case st.Signal() == syscall.SIGXCPU || (st.Signal() == syscall.SIGKILL && used >= time.Duration(cpu)*time.Second-time.Second):
			fmt.Fprintf(os.Stderr, "\nneedle-sandbox: stopped: CPU time limit (%d s)\n", cpu)
		}
		os.Exit(128 + int(st.Signal()))
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// processes counts the processes of this PID namespace (the sandbox's
// own /proc), this one and the namespace's init included.
func processes() int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if name[0] >= '0' && name[0] <= '9' {
			n++
		}
	}
	return n - 2
}
`

// launcher builds the launcher once per Runner (outside the sandbox, with
// the go command, like the self-test: it is Needle's own code) into the
// cache, named by its source and toolchain so that Runners of several
// processes share one build.
func (r *Runner) launcher(ctx context.Context) (string, error) {
	return r.launch.get(ctx, r.buildLauncher)
}

func (r *Runner) buildLauncher(ctx context.Context) (string, error) {
	return r.buildOwn(ctx, "launch", "needlelaunch", "needle-launch", launcherSource)
}

// buildOwn builds one of Needle's own programs (the launcher, the
// sandbox probe) from source with the go command, outside the sandbox,
// once per toolchain and source into CacheDir/kind/<digest>/name, and
// returns the binary's path. A later process finds it there: the sandbox
// cannot write CacheDir, so what is there is what the go command built.
func (r *Runner) buildOwn(ctx context.Context, kind, module, name, source string) (string, error) {
	version, reason := r.goVersion(ctx)
	if reason != "" {
		return "", errors.New(reason)
	}
	sum := sha256.Sum256([]byte(version + "\x00" + source))
	dir := filepath.Join(r.CacheDir, kind, hex.EncodeToString(sum[:8]))
	bin := filepath.Join(dir, name)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	for file, data := range map[string]string{"go.mod": "module " + module + "\n\ngo 1.21\n", "main.go": source} {
		if err := os.WriteFile(filepath.Join(src, file), []byte(data), 0o644); err != nil {
			return "", err
		}
	}
	tmp := filepath.Join(src, name)
	bctx, cancel := context.WithTimeout(ctx, probeDeadline)
	defer cancel()
	env := append(r.goEnv(filepath.Join(src, "tmp")), "CGO_ENABLED=0")
	res := r.coldBuild(bctx, classOwn, proc{argv: []string{r.Go, "build", "-o", tmp, "."}, dir: src, env: env, maxErr: 64 << 10}.runner(bctx))
	if res.err != nil || res.exitCode != 0 {
		return "", fmt.Errorf("build the sandbox %s: %v %s", kind, res.err, bytes.TrimSpace(res.stderr))
	}
	// A rename is atomic: a concurrent build of another process finds
	// either no binary or a whole one.
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// limitIn finds the launcher's account of why it stopped in out (the
// last marker line), or says the address space stopped a Go program that
// died out of memory (oom); "" for neither.
func limitIn(out []byte, oom bool, l Limits) string {
	if i := bytes.LastIndex(out, []byte("\n"+limitMarker+"stopped: ")); i >= 0 {
		line, _, _ := strings.Cut(string(out[i+1+len(limitMarker):]), "\n")
		return line
	}
	if oom || outOfMemory(string(out)) {
		return fmt.Sprintf("stopped: address space limit (%d bytes): out of memory", l.AddressSpace)
	}
	return ""
}

// outOfMemory reports whether s holds the Go runtime's death past its
// address space ("fatal error: out of memory", after "runtime: out of
// memory: cannot allocate …").
func outOfMemory(s string) bool {
	return strings.Contains(s, "fatal error: out of memory") || strings.Contains(s, "runtime: out of memory")
}
