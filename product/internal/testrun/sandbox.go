package testrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/needle-dev/needle/product/internal/tomlstr"
)

// Sandbox runs commands through the pinned codex's Linux sandbox (`codex
// sandbox`): the policy Needle's workers run under — bubblewrap with a
// read-only bind of /, new user, PID, IPC and network namespaces, and a
// seccomp filter that refuses to create any socket but AF_UNIX and refuses
// connecting or binding even those. A named permission profile, passed on
// the command line, makes exactly the given roots writable.
type Sandbox struct {
	// Codex is the codex binary.
	Codex string
	// Home is a Needle-owned CODEX_HOME: codex reads its configuration from
	// there, never from the user's ~/.codex.
	Home string
}

// profileName is the permission profile the command line defines.
const profileName = "needle_testrun"

// mountNames are the entries the sandbox mounts read-only inside each
// writable root so that a sandboxed command cannot change them. It makes
// empty directories for those that do not exist and removes them when the
// command ends normally, but not when it is killed; cleanup removes such
// leftovers.
var mountNames = []string{".git", ".codex", ".agents", ".aws"}

// wrap returns the argv running argv in dir with only writable writable.
func (s *Sandbox) wrap(dir string, writable []string, argv []string) ([]string, error) {
	var table strings.Builder
	table.WriteString(`{"/"="read"`)
	for _, w := range writable {
		if !filepath.IsAbs(w) || filepath.Clean(w) != w || w == "/" {
			return nil, fmt.Errorf("sandbox: writable root %q is not a clean absolute path", w)
		}
		q, err := tomlString(w)
		if err != nil {
			return nil, err
		}
		table.WriteString("," + q + `="write"`)
	}
	table.WriteString("}")
	out := []string{s.Codex, "sandbox",
		"-c", "permissions." + profileName + ".filesystem=" + table.String(),
		"-c", "permissions." + profileName + ".network={enabled=false}",
		"-P", profileName, "-C", dir, "--"}
	return append(out, argv...), nil
}

// tomlString quotes s as a TOML basic string; control characters are
// refused rather than escaped: no path Needle makes has them.
func tomlString(s string) (string, error) {
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("sandbox: path %q has a control character", s)
		}
	}
	return tomlstr.Quote(s), nil
}

// env is the sandbox's own part of a command's environment.
func (s *Sandbox) env() []string { return []string{"CODEX_HOME=" + s.Home} }

// probeSource is the self-test run inside the sandbox before Needle trusts
// it: every escape it tries must fail, the one allowed write must succeed.
const probeSource = `package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	tcpAddr, unixPath, inside, outside := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	res := map[string]string{}
	put := func(k string, err error) {
		if err != nil {
			res[k] = err.Error()
		} else {
			res[k] = ""
		}
	}
	c, err := net.DialTimeout("tcp", tcpAddr, 2*time.Second)
	put("tcp_connect", err)
	if c != nil {
		c.Close()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	put("tcp_listen", err)
	if l != nil {
		l.Close()
	}
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	put("udp_listen", err)
	if u != nil {
		u.Close()
	}
	_, err = net.Dial("udp", "192.0.2.1:53")
	put("udp_dial", err)
	_, err = net.Dial("unix", unixPath)
	put("unix_connect", err)
	ul, err := net.Listen("unix", filepath.Join(inside, "probe.sock"))
	put("unix_listen", err)
	if ul != nil {
		ul.Close()
	}
	put("write_inside", os.WriteFile(filepath.Join(inside, "probe"), []byte("ok"), 0o644))
	put("write_outside", os.WriteFile(filepath.Join(outside, "probe"), []byte("escaped"), 0o644))
	for name, r := range map[string]int{"rlimit_nproc": 6, "rlimit_as": syscall.RLIMIT_AS, "rlimit_fsize": syscall.RLIMIT_FSIZE, "rlimit_cpu": syscall.RLIMIT_CPU} {
		var l syscall.Rlimit
		if err := syscall.Getrlimit(r, &l); err == nil {
			res[name] = strconv.FormatUint(l.Max, 10)
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)
}
`

// probe runs the self-test bin (built by the go command outside the
// sandbox: it is Needle's own code) in the sandbox through launch (the
// launcher and its arguments for lim). It returns nil only when the
// sandbox started, the write inside its writable root succeeded, every
// socket and the write outside failed, and the limits held.
func (s *Sandbox) probe(ctx context.Context, bin string, launch []string, lim Limits) error {

	// The probe's directories hold unix sockets, whose paths the kernel
	// bounds (108 bytes): they go to a short temporary directory rather than
	// below dir, however deep the cache lies, so that a socket refused for
	// its path's length never passes for one the sandbox refused.
	run, err := shortTempDir("needle-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(run)
	inside, outside := filepath.Join(run, "inside"), filepath.Join(run, "outside")
	for _, d := range []string{inside, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go acceptAll(ln)
	sock := filepath.Join(outside, "s.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	defer uln.Close()
	go acceptAll(uln)

	argv, err := s.wrap(inside, []string{inside}, append(launch, bin, ln.Addr().String(), sock, inside, outside))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := proc{argv: argv, dir: inside, env: append([]string{"PATH=/usr/bin:/bin"}, s.env()...), maxErr: 64 << 10, sandbox: inside,
		stdout: func(rd io.Reader) error { _, err := io.Copy(&out, io.LimitReader(rd, 64<<10)); return err }}.run(ctx)
	if r.err != nil || r.exitCode != 0 {
		return fmt.Errorf("the sandbox did not run the probe (exit %d): %v %s", r.exitCode, r.err, r.stderr)
	}
	var res map[string]*string
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return fmt.Errorf("sandbox probe output %q: %w", out.Bytes(), err)
	}
	return judgeProbe(res, outside, lim)
}

// judgeProbe checks the probe's report res (each check's error text, ""
// for success; the limits it ran under): every socket and the write to
// outside must have failed, leaving no file there, the write inside must
// have succeeded, and each limit must be lim's. A check missing from the
// report counts as an escape.
func judgeProbe(res map[string]*string, outside string, lim Limits) error {
	var escapes []string
	for _, k := range []string{"tcp_connect", "tcp_listen", "udp_listen", "udp_dial", "unix_connect", "unix_listen", "write_outside"} {
		if v, ok := res[k]; !ok || v == nil || *v == "" {
			escapes = append(escapes, k)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "probe")); err == nil {
		escapes = append(escapes, "write_outside (file present)")
	}
	if len(escapes) > 0 {
		return fmt.Errorf("the sandbox let the probe escape: %s", strings.Join(escapes, ", "))
	}
	if v := res["write_inside"]; v == nil || *v != "" {
		return errors.New("the sandbox refused a write inside its writable root")
	}
	want := map[string]string{"rlimit_nproc": strconv.Itoa(lim.Processes), "rlimit_as": strconv.FormatInt(lim.AddressSpace, 10),
		"rlimit_fsize": strconv.FormatInt(lim.FileSize, 10), "rlimit_cpu": lim.args()[3]}
	for _, k := range []string{"rlimit_nproc", "rlimit_as", "rlimit_fsize", "rlimit_cpu"} {
		if v := res[k]; v == nil || *v != want[k] {
			got := "none"
			if v != nil {
				got = *v
			}
			return fmt.Errorf("the sandbox's %s is %s, want %s: its limits do not hold", k, got, want[k])
		}
	}
	return nil
}

// maxSocketPath is the longest path a unix socket may be bound at
// (sockaddr_un's sun_path less its terminating NUL).
const maxSocketPath = 107

// probeSocketRoom is what the probe appends to its run directory for its
// longest socket path ("/inside/probe.sock").
const probeSocketRoom = len("/inside/probe.sock")

// shortTempDir makes a directory for the probe under the temporary
// directory, or under /tmp when that is too deep for a socket path.
func shortTempDir(pattern string) (string, error) {
	for _, root := range []string{os.TempDir(), "/tmp"} {
		if len(root)+1+len(pattern)+20+probeSocketRoom > maxSocketPath {
			continue
		}
		dir, err := os.MkdirTemp(root, pattern)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil && len(real)+probeSocketRoom <= maxSocketPath {
			return real, nil
		}
		os.RemoveAll(dir)
	}
	return "", fmt.Errorf("sandbox probe: no temporary directory short enough for a unix socket path (%d bytes) under %s or /tmp", maxSocketPath, os.TempDir())
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// cleanup removes what the sandbox leaves in a writable root when its
// command is killed: the empty mount points of mountNames that were not
// there before.
func cleanup(root string, before map[string]bool) {
	for _, n := range mountNames {
		if before[n] {
			continue
		}
		p := filepath.Join(root, n)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			_ = os.Remove(p) // fails, harmlessly, if not empty: then it is not ours
		}
	}
}

// present records which of mountNames exist in root.
func present(root string) map[string]bool {
	m := map[string]bool{}
	for _, n := range mountNames {
		if _, err := os.Lstat(filepath.Join(root, n)); err == nil {
			m[n] = true
		}
	}
	return m
}
