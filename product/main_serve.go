package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/internal/ipc"
)

const usageServe = `Usage: needle serve [--data-dir DIR] [--addr 127.0.0.1:0]

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
  - on loopback HTTP (--addr, 127.0.0.1 or ::1 only; port 0 picks one): the
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
  --addr ADDR      the loopback address to listen on (default 127.0.0.1:0)
`

// shutdownGrace bounds how long a stopping runtime lets requests and
// commands finish before it cancels them.
const shutdownGrace = 30 * time.Second

func (c *cli) serve(args []string) int {
	fs := c.flags("serve")
	dataDir := fs.String("data-dir", "", "")
	addr := fs.String("addr", "127.0.0.1:0", "")
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

const usageUI = `Usage: needle ui [--data-dir DIR]

Print a fresh one-time login URL of the web UI of the resident runtime of
DIR ('needle serve'). Opening it in a browser on this machine logs the
browser in (a session cookie) and shows the UI; the URL works once, for ten
minutes.
`

func (c *cli) ui(args []string) int {
	fl := c.flags("ui")
	dataDir := fl.String("data-dir", "", "")
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
	return 0
}
