package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/progress"
)

// needlebench demo shows Needle end to end without model credentials: the
// real needle command over a throwaway copy of the fixture repository
// grepx and a throwaway data directory, with the replay App Server
// (needlebench appserver-replay) serving the real codex's frozen sessions
// of frozen/worker/grepx and frozen/lifecycle/verified in place of a
// model. Only the sandbox of the lifecycle's test run needs the pinned
// codex binary; it talks to no model.

// demoOptions are needlebench demo's flags, completed by check.
type demoOptions struct {
	root, needle, codex, testsCache string
	keep, noServe, wait             bool
}

// demo is needlebench demo [--root DIR] [--needle BIN] [--codex BIN]
// [--tests-cache DIR] [--keep] [--no-serve] [--wait].
func (h *harness) demo(args []string) int {
	fs := h.flags("demo")
	var o demoOptions
	fs.StringVar(&o.root, "root", "", "")
	fs.StringVar(&o.needle, "needle", "", "")
	fs.StringVar(&o.codex, "codex", "", "")
	fs.StringVar(&o.testsCache, "tests-cache", "", "")
	fs.BoolVar(&o.keep, "keep", false, "")
	fs.BoolVar(&o.noServe, "no-serve", false, "")
	fs.BoolVar(&o.wait, "wait", false, "")
	if !h.parse(fs, args) {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench demo: takes no arguments\n\n%s", usage)
		return 2
	}
	if o.noServe && o.wait {
		fmt.Fprintf(h.stderr, "needlebench demo: --wait waits on needle serve, which --no-serve skips\n")
		return 2
	}
	if err := o.check(); err != nil {
		fmt.Fprintf(h.stderr, "needlebench demo: %v\n", err)
		return 2
	}
	o.wait = o.wait || (!o.noServe && isTerminal(h.stdin))
	if err := runDemo(h.ctx, o, h.stdout); err != nil {
		fmt.Fprintf(h.stderr, "needlebench demo: %v\n", err)
		return 1
	}
	return 0
}

// check completes the options: the Needle repository holding the frozen
// transcripts and the fixtures, the needle and codex binaries, the test
// cache. It creates nothing.
func (o *demoOptions) check() error {
	var err error
	if o.root, err = demoRoot(o.root); err != nil {
		return err
	}
	if o.needle == "" {
		o.needle = besideSelf("needle")
	}
	if o.needle, err = exec.LookPath(o.needle); err != nil {
		return fmt.Errorf("cannot find the needle command (--needle BIN; make demo builds bin/needle): %v", err)
	}
	if o.codex == "" {
		o.codex = "codex"
	}
	if o.codex, err = exec.LookPath(o.codex); err != nil {
		return fmt.Errorf("the lifecycle's test run needs the pinned codex for its sandbox (--codex BIN; make demo installs it): %v", err)
	}
	if o.testsCache == "" {
		// The lifecycle tests' and make frozen-lifecycle's cache: after
		// either, even the first demo finds the standard library built.
		o.testsCache = filepath.Join(o.root, ".cache", "testrun-lifecycle")
	}
	o.testsCache, err = filepath.Abs(o.testsCache)
	return err
}

// demoRoot returns the Needle repository: dir if given, else the first of
// the working directory, the executable's directory and their parents that
// holds the demo's frozen transcripts and fixture.
func demoRoot(dir string) (string, error) {
	holds := func(d string) bool {
		for _, p := range []string{"frozen/worker/grepx", "frozen/lifecycle/verified", "fixtures/repos/grepx.txtar", "fixtures/lifecycle/verified.json"} {
			if _, err := os.Stat(filepath.Join(d, filepath.FromSlash(p))); err != nil {
				return false
			}
		}
		return true
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil || !holds(abs) {
			return "", fmt.Errorf("--root %s is not a Needle repository: it lacks frozen/worker/grepx, frozen/lifecycle/verified or the fixtures", dir)
		}
		return abs, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for ; ; d = filepath.Dir(d) {
			if holds(d) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("cannot find the Needle repository (its frozen/ and fixtures/): run in it or pass --root DIR")
}

// besideSelf is the path of name in the directory of the running
// executable if it is there (bin/needle beside bin/needlebench), else name.
func besideSelf(name string) string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return name
}

// isTerminal reports whether r is a terminal: a file the terminal ioctl
// answers (/dev/null is a character device, not a terminal).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && progress.IsTerminalFile(f)
}

// demoRun is one demo: its options, where it prints, and its throwaway
// directory (repo/, data/ and the request files).
type demoRun struct {
	ctx context.Context
	o   demoOptions
	out io.Writer
	dir string
	// self is the needlebench command, the replay App Server.
	self []string
	// cited is the location the certified answer cited last.
	cited string
}

// runDemo sets the demo up, plays its steps and removes its directory
// unless --keep.
func runDemo(ctx context.Context, o demoOptions, out io.Writer) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "needle-demo-")
	if err != nil {
		return err
	}
	d := &demoRun{ctx: ctx, o: o, out: out, dir: dir}
	err = d.play()
	if o.keep {
		fmt.Fprintf(out, "\nkept %s (repo/, data/): try needle change list --repository %s --data-dir %s\n",
			dir, filepath.Join(dir, "repo"), filepath.Join(dir, "data"))
	} else if rerr := os.RemoveAll(dir); rerr != nil {
		err = errors.Join(err, rerr)
	} else {
		fmt.Fprintf(out, "\nremoved %s (--keep keeps it)\n", dir)
	}
	if err == nil {
		fmt.Fprintf(out, "demo done in %.1fs\n", time.Since(start).Seconds())
	}
	return err
}

// play runs the steps in order; the first that fails stops the demo.
func (d *demoRun) play() error {
	for _, step := range []func() error{d.setUp, d.workerStep, d.hitStep, d.followStep, d.staleStep, d.lifecycleStep, d.serveStep} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// say prints a step's title or its plain-language lines.
func (d *demoRun) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

// needle runs the needle command in the demo directory, printing it, and
// returns its stdout; a failure names the command and its stderr.
func (d *demoRun) needle(args ...string) (string, error) {
	var shown []string
	for _, a := range args {
		shown = append(shown, shellWord(a))
	}
	d.say("   $ needle %s", strings.Join(shown, " "))
	cmd := exec.CommandContext(d.ctx, d.o.needle, args...)
	cmd.Dir = d.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("needle %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@", r)
	}) {
		return s
	}
	return shellQuote(s)
}

// setUp copies the fixture into repo/ and commits it, and configures the
// data directory: the replay App Server as codex, the pinned codex and the
// persistent cache for the sandboxed test run.
func (d *demoRun) setUp() error {
	d.say("Needle demo: no model and no credentials. The App Server is needlebench appserver-replay,")
	d.say("which plays sessions of the real codex frozen in %s.", filepath.Join(d.o.root, "frozen"))
	d.say("Throwaway directory %s: repo/ (a copy of fixtures/repos/grepx.txtar, committed) and data/.", d.dir)
	repo := filepath.Join(d.dir, "repo")
	if _, err := extractTxtar(filepath.Join(d.o.root, "fixtures", "repos", "grepx.txtar"), repo); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "grepx"}} {
		if _, err := git(d.ctx, repo, args...); err != nil {
			return err
		}
	}
	self, err := selfCommand()
	if err != nil {
		return err
	}
	d.self = self
	replay := d.replayCommand(self, "worker", "grepx")
	d.say("\n0. Configure the data directory: the replay server stands in for codex app-server;")
	d.say("   the change's test run uses the pinned codex's sandbox and a build cache kept across demos")
	d.say("   (a cold cache costs the first demo a minute or two compiling the standard library; later ones reuse it).")
	for _, kv := range [][2]string{{"codex.command", replay}, {"tests.codex", d.o.codex}, {"tests.cache", d.o.testsCache}} {
		if _, err := d.needle("config", "set", "--data-dir", "data", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// replayCommand is the App Server command that replays the frozen sessions
// of frozen/PATH.
func (d *demoRun) replayCommand(self []string, path ...string) string {
	dir := filepath.Join(append([]string{d.o.root, "frozen"}, path...)...)
	return strings.Join(append(self, "appserver-replay", "--transcripts", dir), " ")
}

// resolved is the part of needle need resolve's JSON the demo reads.
type resolved struct {
	Status     string `json:"status"`
	Resolution struct {
		Kind string `json:"kind"`
	} `json:"resolution"`
	WorkerSpawned bool   `json:"worker_spawned"`
	Context       string `json:"context"`
}

// location is the first implementation_location line of the context.
func (r resolved) location() string {
	for _, l := range strings.Split(r.Context, "\n") {
		if strings.HasPrefix(l, "implementation_location: ") {
			return l
		}
	}
	return ""
}

// resolve runs need resolve on need.json and prints its outcome.
func (d *demoRun) resolve(flags ...string) (resolved, error) {
	var r resolved
	out, err := d.needle(append(append([]string{"need", "resolve", "--repository", "repo", "--data-dir", "data"}, flags...), "need.json")...)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return r, fmt.Errorf("need resolve: %v", err)
	}
	d.say("   status %s, resolution %s, worker spawned: %t", r.Status, r.Resolution.Kind, r.WorkerSpawned)
	if loc := r.location(); loc != "" {
		d.say("   %s", loc)
	}
	return r, nil
}

// workerStep: a need nothing answers yet spends a worker, whose answer the
// validators certify.
func (d *demoRun) workerStep() error {
	need, err := os.ReadFile(filepath.Join(d.o.root, "fixtures", "worker", "newsearcher.need.json"))
	if err == nil {
		err = os.WriteFile(filepath.Join(d.dir, "need.json"), need, 0o644)
	}
	if err != nil {
		return err
	}
	d.say("\n1. A need answered by a worker: %s", strings.TrimSpace(string(need)))
	d.say("   Nothing is known yet: Needle runs a read-only evidence worker in a disposable checkout;")
	d.say("   its answer counts only once Needle's validators (go/types) certify it.")
	r, err := d.resolve()
	if err != nil {
		return err
	}
	if r.Status != "worker" || r.Resolution.Kind != "miss" || !r.WorkerSpawned || r.location() == "" {
		return fmt.Errorf("step 1: want a worker's certified location, got %s/%s:\n%s", r.Status, r.Resolution.Kind, r.Context)
	}
	d.say("   → certified: the context cites the artifact the worker's answer became.")
	d.cited = r.location()
	return nil
}

// hitStep: the same need again is answered from the certificate.
func (d *demoRun) hitStep() error {
	d.say("\n2. The same need again: answered from the certified evidence, no worker.")
	r, err := d.resolve()
	if err != nil {
		return err
	}
	if r.Resolution.Kind != "exact_hit" || r.WorkerSpawned {
		return fmt.Errorf("step 2: want an exact hit without a worker, got %s (worker spawned %t)", r.Resolution.Kind, r.WorkerSpawned)
	}
	d.say("   → a hit: the cited code is unchanged, so the certificate still holds.")
	d.cited = r.location()
	return nil
}

// demoAnchor is the line of search.go above which the follow step inserts
// demoInsert.
const (
	demoAnchor = "// Searcher finds lines matching a pattern.\n"
	demoInsert = "// DefaultPattern is searched for when none is given.\nconst DefaultPattern = \"\"\n\n"
)

var spanRE = regexp.MustCompile(`search\.go:(\d+)-(\d+)`)

// followStep: lines inserted above the cited code; the proof replays and
// the answer moves with the code.
func (d *demoRun) followStep() error {
	d.say("\n3. Edit the file: 3 lines (a constant) inserted in search.go above the Searcher type.")
	d.say("   The cited code moved but did not change: Needle replays the proof and the answer follows it.")
	m := spanRE.FindStringSubmatch(d.cited)
	if m == nil {
		return fmt.Errorf("step 3: no search.go location in %q", d.cited)
	}
	before, _ := strconv.Atoi(m[1])
	if err := d.editSearch("step 3", demoAnchor, demoInsert+demoAnchor); err != nil {
		return err
	}
	r, err := d.resolve()
	if err != nil {
		return err
	}
	after := spanRE.FindStringSubmatch(r.location())
	if r.Resolution.Kind != "exact_hit" || r.WorkerSpawned || after == nil || after[1] != strconv.Itoa(before+3) {
		return fmt.Errorf("step 3: want an exact hit 3 lines below line %d, got %s:\n%s", before, r.Resolution.Kind, r.Context)
	}
	d.say("   → followed: line %d is now line %s, no worker.", before, after[1])
	return nil
}

// editSearch replaces the first old in the demo repository's search.go
// with new; a search.go without old is the step's error.
func (d *demoRun) editSearch(step, old, new string) error {
	file := filepath.Join(d.dir, "repo", "search.go")
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if !strings.Contains(string(src), old) {
		return fmt.Errorf("%s: search.go lacks the line %q", step, old)
	}
	return os.WriteFile(file, []byte(strings.Replace(string(src), old, new, 1)), 0o644)
}

// demoBody and demoBodyEdited are NewSearcher's body before and after the
// stale step's edit.
const (
	demoBody       = "\treturn &Searcher{pattern: o.Pattern, split: lineSplitter(o)}\n"
	demoBodyEdited = "\ts := &Searcher{pattern: o.Pattern, split: lineSplitter(o)}\n\treturn s\n"
)

// staleStep: the cited code itself changed; Needle serves nothing from
// the old certificate. search.go is restored afterwards.
func (d *demoRun) staleStep() error {
	d.say("\n4. Edit the cited code itself (NewSearcher's body). The certificate no longer holds: Needle")
	d.say("   serves nothing from it (--cache-only: answer from evidence or not at all, no worker).")
	if err := d.editSearch("step 4", demoBody, demoBodyEdited); err != nil {
		return err
	}
	r, err := d.resolve("--cache-only")
	if err != nil {
		return err
	}
	if r.Resolution.Kind != "stale" || r.WorkerSpawned || r.location() != "" {
		return fmt.Errorf("step 4: want stale evidence refused, got %s:\n%s", r.Resolution.Kind, r.Context)
	}
	d.say("   → stale: no context served; the old answer is never returned once its code changed.")
	if _, err := git(d.ctx, filepath.Join(d.dir, "repo"), "checkout", "-q", "search.go"); err != nil {
		return err
	}
	d.say("   (search.go restored with git checkout for the change below.)")
	return nil
}
