package product

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/codexhook"
)

// The Codex Stop hook (needle hook codex). Codex 0.171.0 runs it when a
// turn of the main model ends, with the Stop event on stdin
// (product/internal/codexhook has the protocol as verified). When the
// model's last message holds a @@need marker, the hook answers
// {"decision":"block","reason":REPLY}: codex continues the same turn with
// the reply as the model's next input (engine_reply.go decides it, within
// the session's ledger and its per-turn bound). Otherwise it prints
// nothing and the turn ends.
//
// stop_hook_active marks the stop of such a continuation. The bound on
// replies does not rest on it: replies are counted per Codex turn id, which
// codex keeps across every continuation of a turn (verified), so the count
// covers continuations Needle asked for and those another Stop hook did.
//
// Codex does not bound a blocking hook, kills only the hook process at its
// timeout, and takes an exit status of 2 as a block with stderr as the
// reason. So the hook never exits 2 (only 0, or 1 for a failure, which
// lets the turn end), and keeps its own deadline below the timeout it is
// installed with: at the deadline a running worker's turn is interrupted
// and its process group killed, and the reply is the typed bypass.

// execSessionEnv is set in the environment of the App Server needle exec
// runs: a hook started inside it stands down, because needle exec answers
// the markers of its thread itself.
const execSessionEnv = "NEEDLE_EXEC_SESSION"

// defaultHookDeadline bounds one run of the hook: a need's worker session
// (a turn per missing obligation) and its cleanup.
const defaultHookDeadline = 4 * time.Minute

// hookTimeoutMargin is how much longer than its deadline codex lets the
// hook run: room for interrupting a worker, killing its process group and
// removing its checkout after the deadline.
const hookTimeoutMargin = time.Minute

// codexHookConfig configures one run of the Codex hook.
type codexHookConfig struct {
	DataDir     string
	RoleProfile string
	Routes      routeSet
	CacheOnly   bool
	// CodexCommand overrides the codex.command setting: the workers' App
	// Server command. The settings are read only for a stop that holds a
	// marker, so the common stop opens nothing.
	CodexCommand string
	Deadline     time.Duration
	// ExecSession is the value of execSessionEnv: when set, the hook
	// stands down.
	ExecSession string
	Log         io.Writer
}

// serveCodexHook answers one hook event read from in, writing the answer
// (if any) to out. An error means the hook failed: the caller exits 1,
// which codex takes as "let the turn end".
func serveCodexHook(ctx context.Context, cfg codexHookConfig, in io.Reader, out io.Writer) error {
	if cfg.Deadline <= 0 {
		cfg.Deadline = defaultHookDeadline
	}
	// The deadline runs from the start: codex kills the hook at its
	// timeout whatever it was doing, reading its input included.
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	ev, err := readHookEvent(ctx, in, cfg.Deadline)
	if err != nil {
		return err
	}
	st := ev.Stop
	switch {
	case st == nil:
		return nil // only Stop is answered
	case cfg.ExecSession != "":
		hookLog(cfg, "needle exec session %s answers its own markers", cfg.ExecSession)
		return nil
	case !st.HasLastAssistantMessage || len(markerLines(st.LastAssistantMessage)) == 0:
		return nil // the common stop: nothing to open, nothing to say
	}
	var workers *CodexConfig
	if !cfg.CacheOnly {
		var err error
		if workers, err = codexConfig(ctx, cfg.DataDir, cfg.CodexCommand); err != nil {
			return err
		}
	}
	eng, err := Open(ctx, Config{DataDir: cfg.DataDir, Repository: ev.Cwd, Routes: cfg.Routes, Codex: workers,
		CacheOnly: cfg.CacheOnly, Transport: "codex-hook", MainModel: ev.Model, RoleProfile: cfg.RoleProfile})
	if err != nil {
		return err
	}
	defer eng.Close()
	session := codexSession(ev.SessionID)
	if err := eng.ResumeSession(ctx, session, sessionFreeze{Profile: eng.RoleProfile(), CacheOnly: cfg.CacheOnly,
		Worker: workers != nil, Protocol: "codex-hook " + codexVersion}); err != nil {
		return err
	}
	if changes := eng.SessionChanges(session); len(changes) > 0 {
		hookLog(cfg, "session %s started under other definitions: %s", session, strings.Join(changes, "; "))
	}
	turn := ev.TurnID
	if turn == "" {
		turn = "session" // no turn id: the whole session is one turn, the tighter bound
	}
	r, err := eng.Reply(ctx, markerMessage{Session: session, Turn: turn, Text: st.LastAssistantMessage})
	if err != nil {
		return err
	}
	if r.Kind == replyNone {
		hookLog(cfg, "no reply: %s", r.Why)
		return nil
	}
	return codexhook.StopOutput{Block: true, Reason: r.Text}.Encode(out)
}

// readHookEvent reads the one event on in within ctx. A reader blocked in
// Read cannot be interrupted: the hook gives up on it at the deadline and
// the process exits, which ends the read.
func readHookEvent(ctx context.Context, in io.Reader, deadline time.Duration) (codexhook.Event, error) {
	type read struct {
		ev  codexhook.Event
		err error
	}
	done := make(chan read, 1)
	go func() {
		ev, err := codexhook.Read(in)
		done <- read{ev, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return r.ev, &Error{Op: "hook.codex", Kind: KindInvalidInput, Err: r.err}
		}
		return r.ev, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return codexhook.Event{}, &Error{Op: "hook.codex", Kind: kindUnavailable,
				Err: fmt.Errorf("no complete hook event on stdin within the deadline (%s)", deadline)}
		}
		return codexhook.Event{}, ctx.Err()
	}
}

func hookLog(cfg codexHookConfig, format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "needle hook codex: "+format+"\n", args...)
	}
}

// hookStatus is what codex shows while the hook runs.
const hookStatus = "Needle: answering @@need"

// codexHookSpec is the hooks-file entry of the Codex hook: argv is the
// needle command line to run. Any command whose words are a program
// followed by "hook codex" is Needle's, wherever the binary lives.
func codexHookSpec(argv []string, deadline time.Duration) codexhook.Spec {
	return codexhook.Spec{
		Event: codexhook.EventStop,
		Handler: codexhook.Handler{Command: codexhook.Command(argv...),
			Timeout: int((deadline + hookTimeoutMargin).Seconds()), StatusMessage: hookStatus},
		Owns: func(command string) bool {
			w, ok := codexhook.Words(command)
			return ok && len(w) >= 3 && w[1] == "hook" && w[2] == "codex"
		},
	}
}

// codexHome is the user's codex configuration directory: CODEX_HOME, or
// ~/.codex.
func codexHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", &Error{Op: "hook.install", Kind: kindIO, Err: fmt.Errorf("no home directory for ~/.codex: %w", err)}
	}
	return filepath.Join(home, ".codex"), nil
}

// hookInstall is what needle hook install or uninstall did.
type hookInstall struct {
	HooksFile  string
	ConfigFile string
	Changed    bool
	Key, Hash  string
	Trusted    bool // the trust entry is recorded (it may have been already)
	Notes      []string
}

// installCodexHook merges the hook running argv into hooksFile and, with
// trust, records its trust in configFile, the user's codex config. The
// config is checked before the hooks file is touched, so a config Trust
// could not edit leaves both files as they were. project is the trusted
// project root a project hooks file needs ("" for the user's file).
func installCodexHook(hooksFile, configFile, project string, argv []string, deadline time.Duration, trust bool) (hookInstall, error) {
	res := hookInstall{HooksFile: hooksFile, ConfigFile: configFile}
	facts, err := codexhook.InspectConfig(configFile)
	if err != nil {
		return res, hookFileError(err)
	}
	spec := codexHookSpec(argv, deadline)
	in, err := codexhook.Install(hooksFile, spec)
	if err != nil {
		return res, hookFileError(err)
	}
	res.HooksFile, res.Changed, res.Key, res.Hash = in.Path, in.Changed, in.Key, in.Hash
	res.Notes = append(res.Notes, retrust(configFile, in)...)
	if trust {
		if _, err := codexhook.Trust(configFile, in.Key, in.Hash); err != nil {
			return res, &Error{Op: "hook.install", Kind: kindIO, Err: fmt.Errorf(
				"the hook is installed in %s but its trust could not be recorded, so codex will not run it: %w", in.Path, err)}
		}
		res.Trusted = true
	} else {
		res.Notes = append(res.Notes, "not trusted: codex runs the hook only once it is trusted (review it in codex's /hooks, "+
			"or run needle hook install again without --no-trust)")
	}
	if project != "" && !facts.TrustedProjects[project] {
		res.Notes = append(res.Notes, fmt.Sprintf("codex reads %s only in a trusted project; add to %s:\n%s",
			in.Path, configFile, codexhook.ProjectLine(project)))
	}
	if facts.TOMLHooks && project == "" {
		res.Notes = append(res.Notes, configFile+" also defines hooks under [hooks]; codex runs both and warns about two representations")
	}
	return res, nil
}

// uninstallCodexHook removes Needle's hook from hooksFile and the trust
// entries it recorded from configFile.
func uninstallCodexHook(hooksFile, configFile string) (hookInstall, error) {
	res := hookInstall{HooksFile: hooksFile, ConfigFile: configFile}
	out, err := codexhook.Uninstall(hooksFile, codexHookSpec([]string{"needle", "hook", "codex"}, 0))
	if err != nil {
		return res, hookFileError(err)
	}
	res.HooksFile, res.Changed = out.Path, out.Changed
	res.Notes = retrust(configFile, out)
	return res, nil
}

// retrust updates the user's trust after an edit of a hooks file: entries
// of Needle handlers that are gone are removed, and the entries of other
// hooks whose position moved follow them. What cannot be updated safely is
// reported: codex will ask to review those hooks again.
func retrust(configFile string, r codexhook.Result) []string {
	var notes []string
	for _, rm := range r.Removed {
		if rm.Key == r.Key || rm.Hash == "" {
			continue // the installed handler took its place; Trust rewrites the hash
		}
		if _, err := codexhook.Untrust(configFile, rm.Key, rm.Hash); err != nil {
			notes = append(notes, fmt.Sprintf("could not remove the trust of %s: %v", rm.Key, err))
		}
	}
	for _, mv := range r.Moved {
		if moved, err := codexhook.MoveTrust(configFile, mv.From, mv.To); err != nil || !moved {
			notes = append(notes, fmt.Sprintf("another hook moved from %s to %s; codex will ask you to review it again", mv.From, mv.To))
		}
	}
	return notes
}

// hookFileError makes a file codex reads that cannot be edited safely an
// invalid-input error naming it (nothing was written).
func hookFileError(err error) error {
	var fe *codexhook.FileError
	if errors.As(err, &fe) {
		return &Error{Op: "hook.install", Kind: kindConflict, Err: fmt.Errorf("%s: %s; nothing was changed", fe.Path, strings.TrimSpace(fe.Msg))}
	}
	return &Error{Op: "hook.install", Kind: kindIO, Err: err}
}
