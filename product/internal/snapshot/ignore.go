package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
)

// ignoreChecker is one long-lived `git check-ignore --stdin -z
// --non-matching -v` for a repository, asked one path at a time, so that a
// validation that reads many files pays one process instead of one per
// file. git reads the index and the configuration when it starts and each
// directory's .gitignore the first time a path under it is asked, and
// never again: the process answers for the repository as it was then. So
// it lives for one unit of work (Repo.Release ends it, and the product
// releases at the end of each resolution), and within it a question is put
// to the process only while what it read is unchanged by lstat (the
// gitInputs as of its start, and every .gitignore as of the first question
// that made git read it); a change stops it and the question goes to a
// one-shot check-ignore, as does any question the process fails to answer.
type ignoreChecker struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	started watchSet              // the gitInputs when the process started
	seen    map[string]seenIgnore // .gitignore path → as git first read it
	spawns  int                   // processes started (tests count them)
	answers int                   // questions the process answered (tests count them)
}

type seenIgnore = watched

// query asks the long-lived process whether rel (clean, relative, no
// pathspec magic) is ignored. ok is false when the answer must come from a
// one-shot check-ignore instead.
func (c *ignoreChecker) query(ctx context.Context, r *Repo, rel string) (ignored, ok bool) {
	if ctx.Err() != nil {
		return false, false // the one-shot path reports the cancellation
	}
	inputs, err := r.inputs.resolve(ctx, r)
	if err != nil {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil && !c.started.unchanged() {
		c.stop()
		return false, false
	}
	if c.cmd == nil {
		set := watchSet{recordedNs: r.now().UnixNano()}
		for _, p := range inputs {
			set.watches = append(set.watches, watch(p))
		}
		if err := c.start(r.root); err != nil {
			return false, false
		}
		c.started = set
	}
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	for _, f := range r.ignoreFiles(dir) {
		if w, ok := c.seen[f]; ok {
			if !w.unchanged() {
				c.stop()
				return false, false
			}
			continue
		}
		c.seen[f] = watch(f) // before git reads it: a later change shows
	}
	ignored, err = c.ask(rel)
	if err != nil {
		c.stop() // a fatal git error ends the process; the one-shot reports it
		return false, false
	}
	return ignored, true
}

// start starts the process in root.
func (c *ignoreChecker) start(root string) error {
	cmd := gitCommand(context.Background(), root, "check-ignore", "--stdin", "-z", "--non-matching", "-v")
	cmd.Env = append(cmd.Env, "GIT_FLUSH=1") // an answer per question, not per buffer
	cmd.Stderr = io.Discard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd, c.stdin, c.stdout, c.seen = cmd, stdin, bufio.NewReader(stdout), map[string]seenIgnore{}
	c.spawns++
	return nil
}

// ask sends one path and reads its record: source, line, pattern and
// path, each NUL-terminated; a pattern starting with "!" re-includes.
func (c *ignoreChecker) ask(rel string) (bool, error) {
	if _, err := io.WriteString(c.stdin, rel+"\x00"); err != nil {
		return false, err
	}
	var fields [4]string
	for i := range fields {
		f, err := c.stdout.ReadString(0)
		if err != nil {
			return false, err
		}
		fields[i] = strings.TrimSuffix(f, "\x00")
	}
	if fields[3] != rel {
		return false, fmt.Errorf("check-ignore answered for %q, asked %q", fields[3], rel)
	}
	c.answers++
	pattern := fields[2]
	return pattern != "" && !strings.HasPrefix(pattern, "!"), nil
}

// stop ends the process: closing its input ends it, a kill makes sure.
func (c *ignoreChecker) stop() {
	if c.cmd == nil {
		return
	}
	c.stdin.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	_ = c.cmd.Wait()
	c.cmd, c.stdin, c.stdout, c.seen = nil, nil, nil, nil
}

// Release ends the current unit of work: the long-lived check-ignore, if
// any, stops, and the next question starts another, which reads the
// repository as it is then. The Repo stays usable.
func (r *Repo) Release() {
	r.ign.mu.Lock()
	r.ign.stop()
	r.ign.mu.Unlock()
	r.inputs.mu.Lock()
	r.inputs.fresh = false
	r.inputs.mu.Unlock()
}

// Close releases the repository's long-lived git process, once the
// detection of OpenAsync (its own git process) has finished.
func (r *Repo) Close() error {
	<-r.det.done
	r.Release()
	return nil
}

// gitCommand is the command runGit runs: git with args in dir, with the
// product's configuration overrides, environment and process group.
func gitCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	full := append([]string{"-c", "core.quotepath=off", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=" + os.DevNull}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	cmd.WaitDelay = gitWaitDelay
	setProcessGroup(cmd)
	return cmd
}
