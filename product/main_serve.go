package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/internal/ipc"
)

const usageServe = `Usage: needle serve [--data-dir DIR] [--addr ADDR]

Run the resident runtime of the data directory DIR until interrupted
(SIGINT or SIGTERM): one per data directory. It holds the profile lock
DIR/serve.lock (a second 'needle serve' on DIR refuses, naming the first),
owns the only connection pool of DIR/needle.db with caches of its decoded
immutable records, and serves:

  - on the IPC socket DIR/needle.sock (mode 0600, this user only): the
    commands need resolve, evidence propose, evidence refresh, mcp serve,
    change, profile, config and db check of any client naming --data-dir
    DIR run here, over this store, with the same results as without a
    runtime (which they fall back to when none runs);
  - on loopback HTTP (--addr, 127.0.0.1 or ::1 only; port 0 picks one;
    without --addr, the address kept in DIR/serve.addr, which the first
    start chooses on 127.0.0.1, so the UI's URL stays the same across
    restarts; when that port is taken, it listens on a free one for this
    start and says so on stderr): the
    web UI and the API /api/v1 (need feed, evidence, accounting, change
    lifecycles with their approval and apply, server-sent events at
    /api/v1/events). API clients
    send 'Authorization: Bearer TOKEN' with the token in DIR/token (0600);
    a browser logs in once through the one-time URL printed at start (or
    minted by 'needle ui'), which sets a session cookie.

It prints the URL, the login URL and the socket on stdout. On SIGINT or
SIGTERM it stops accepting, ends the event streams, lets running requests
and commands finish (MCP sessions answer what they accepted and cancel
their background evidence refresh), releases the lock and exits 0. A runtime that crashed leaves a lock the next one takes
over safely.

Flags:
  --data-dir DIR   the Needle data directory (default: see needle help)
  --addr ADDR      the loopback address to listen on (default: the one kept
                   in DIR/serve.addr)
`

// shutdownGrace bounds how long a stopping runtime lets requests and
// commands finish before it cancels them.
const shutdownGrace = 30 * time.Second

func (c *cli) serve(args []string) int {
	fs := c.flags("serve")
	dataDir := fs.String("data-dir", "", "")
	addr := fs.String("addr", "", "")
	if code, ok := c.parse(fs, usageServe, args); !ok {
		return code
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle serve: --data-dir DIR is required and takes no arguments\n\n%s", usageServe)
		return 2
	}
	rt, err := startRuntime(c.ctx, runtimeConfig{DataDir: c.absPath(*dataDir), Addr: *addr, Log: c.stderr})
	if err != nil {
		return c.fail("serve", err)
	}
	fmt.Fprintf(c.stdout, "needle serve: %s\nlog in: %s\nipc: %s\n", rt.URL(), rt.LoginURL(), rt.SocketPath())
	<-c.ctx.Done()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		return c.fail("serve", err)
	}
	fmt.Fprintln(c.stderr, "needle serve: stopped")
	return 0
}

const usageUI = `Usage: needle ui [--data-dir DIR] [--open]

Print a fresh one-time login URL of the web UI of the resident runtime of
DIR ('needle serve'). Opening it in a browser on this machine logs the
browser in (a session cookie) and shows the UI; the URL works once, for ten
minutes. A restarted runtime forgets its sessions: log in again.

Flags:
  --data-dir DIR   the Needle data directory (default: see needle help)
  --open           also open the URL in a browser: with $BROWSER (its first
                   entry; %s in it stands for the URL, else the URL is the
                   last argument), else with xdg-open. When neither is
                   available or the opener fails, it says so; the URL is
                   printed either way.
`

func (c *cli) ui(args []string) int {
	fl := c.flags("ui")
	dataDir := fl.String("data-dir", "", "")
	open := fl.Bool("open", false, "")
	if code, ok := c.parse(fl, usageUI, args); !ok {
		return code
	}
	if *dataDir == "" || fl.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle ui: --data-dir DIR is required and takes no arguments\n\n%s", usageUI)
		return 2
	}
	sock, err := filepath.Abs(filepath.Join(c.absPath(*dataDir), socketFileName))
	if err != nil {
		return c.fail("ui", &Error{Op: "ui", Kind: kindIO, Err: err})
	}
	req, _ := http.NewRequestWithContext(c.ctx, http.MethodPost, ipc.BaseURL+"/ipc/v1/login", nil)
	resp, err := ipc.Client(sock).Do(req)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprintf(c.stderr, "needle ui: no resident runtime runs for %s; start one with: needle serve --data-dir %s\n", *dataDir, *dataDir)
		return 1
	}
	if err != nil {
		return c.fail("ui", &Error{Op: "ui", Kind: kindIO, Err: err})
	}
	defer resp.Body.Close()
	var out loginResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return c.fail("ui", &Error{Op: "ui", Kind: kindOther, Err: fmt.Errorf("the runtime answered %s", resp.Status)})
	}
	fmt.Fprintln(c.stdout, out.URL)
	if *open {
		c.openURL(out.URL)
	}
	return 0
}

// openerWait bounds how long needle ui --open waits for the opener to
// exit: xdg-open hands the URL over and exits, while a browser started
// as $BROWSER may run on; past the bound it is left running.
const openerWait = 5 * time.Second

// openURL opens url with the user's browser opener and says on stderr
// what happened.
func (c *cli) openURL(url string) {
	argv, err := browserCommand(url, os.Getenv("BROWSER"), exec.LookPath)
	if err != nil {
		fmt.Fprintf(c.stderr, "needle ui: %v; open the URL above in your browser\n", err)
		return
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(c.stderr, "needle ui: could not start %s (%v); open the URL above in your browser\n", argv[0], err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(c.stderr, "needle ui: %s failed (%v); open the URL above in your browser\n", argv[0], err)
			return
		}
	case <-time.After(openerWait):
		cmd.Process.Release()
	}
	fmt.Fprintf(c.stderr, "needle ui: opened the login URL with %s\n", argv[0])
}

// browserCommand is the command that opens url: the first entry of
// $BROWSER (a colon-separated list of commands, %s standing for the URL),
// else xdg-open when lookPath finds it.
func browserCommand(url, browserEnv string, lookPath func(string) (string, error)) ([]string, error) {
	for entry := range strings.SplitSeq(browserEnv, ":") {
		fields := strings.Fields(entry)
		if len(fields) == 0 {
			continue
		}
		placed := false
		for i, f := range fields {
			if strings.Contains(f, "%s") {
				fields[i], placed = strings.ReplaceAll(f, "%s", url), true
			}
		}
		if !placed {
			fields = append(fields, url)
		}
		return fields, nil
	}
	if p, err := lookPath("xdg-open"); err == nil {
		return []string{p, url}, nil
	}
	return nil, errors.New("no browser to open it with ($BROWSER is not set and xdg-open is not on PATH)")
}
