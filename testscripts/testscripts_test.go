// Package testscripts runs the golden scenarios in testdata/*.txtar over the
// real needle and needlebench commands (go test ./testscripts). Set
// NEEDLE_UPDATE=1 to rewrite the golden files that a cmp compares against.
package testscripts

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/needle-dev/needle/product/testenv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/needle-dev/needle/bench"
	"github.com/needle-dev/needle/product"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
	_ "modernc.org/sqlite"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"needle": func() {
			// As cmd/needle: interrupt and terminate cancel the context.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := product.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
		"needlebench": func() {
			// As cmd/needlebench: interrupt and terminate cancel the context.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := bench.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
	})
}

func TestScripts(t *testing.T) {
	codexBin = testenv.Codex(t)
	testscript.Run(t, scriptParams(nil, setupEnv))
}

// codexBin is the pinned codex the scripts see as $NEEDLE_CODEX_BIN.
var codexBin string

// residentScripts are the scripts that also run against a resident
// runtime (TestScripts_Resident): the commands that use one.
var residentScripts = []string{"need_resolve", "evidence_propose", "worker_evidence", "mcp_need_context",
	"mcp_change", "mcp_change_rejected", "profile_manage", "evidence_refresh", "change_lifecycle", "change_conflict", "change_approval_stale",
	"mcp_change_apply", "change_invalid", "change_run_no_worker"}

// TestScripts_Resident runs the resolve, propose, MCP and profile scripts
// again with `needle serve` running on the script's data directory
// ($WORK/data) from the start: every command then runs in the runtime over
// IPC, and the scripts' expectations must hold unchanged.
func TestScripts_Resident(t *testing.T) {
	var files []string
	for _, name := range residentScripts {
		files = append(files, filepath.Join("testdata", name+".txtar"))
	}
	codexBin = testenv.Codex(t)
	testscript.Run(t, scriptParams(files, func(env *testscript.Env) error {
		if err := setupEnv(env); err != nil {
			return err
		}
		return startRuntime(env, filepath.Join(env.WorkDir, "data"))
	}))
}

func scriptParams(files []string, setup func(*testscript.Env) error) testscript.Params {
	p := testscript.Params{
		Dir:                 "testdata",
		Files:               files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("NEEDLE_UPDATE") == "1" && files == nil,
		Setup:               setup,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fixture":   cmdFixture,
			"exitcode":  cmdExitCode,
			"jsonget":   cmdJSONGet,
			"sqlexec":   cmdSQLExec,
			"grepenv":   cmdGrepEnv,
			"expand":    cmdExpand,
			"jsonstrip": cmdJSONStrip,
		},
	}
	if files != nil {
		p.Dir = ""
	}
	return p
}

func setupEnv(env *testscript.Env) error {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen"))
	env.Setenv("NEEDLE_FROZEN", frozen)
	env.Setenv("NEEDLE_FIXTURES", filepath.Join(filepath.Dir(frozen), "fixtures"))
	env.Setenv("NEEDLE_CORPUS", filepath.Join(filepath.Dir(frozen), "corpus"))
	env.Setenv("NEEDLE_HOOKDATA", filepath.Join(filepath.Dir(frozen), "product", "internal", "codexhook", "testdata"))
	// The change lifecycle runs its tests in the pinned codex's
	// sandbox, with the repository's shared test cache.
	env.Setenv("NEEDLE_CODEX_BIN", codexBin)
	cache := filepath.Join(filepath.Dir(frozen), ".cache", "testrun-lifecycle")
	env.Setenv("NEEDLE_TESTRUN_CACHE", cache)
	if err != nil {
		return err
	}
	return testenv.ShareGoBuild(cache)
}

// startRuntime starts `needle serve --data-dir dataDir` in the script's
// environment, waits until it listens (it prints its socket last), and at
// the end of the script checks that it served the script's commands, stops
// it with SIGTERM and requires a clean exit.
func startRuntime(env *testscript.Env, dataDir string) error {
	needle, err := exec.LookPath("needle")
	if err != nil {
		return err
	}
	cmd := exec.Command(needle, "serve", "--data-dir", dataDir)
	cmd.Env = env.Vars
	cmd.Dir = env.WorkDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var sock string
	lines := bufio.NewScanner(out)
	for sock == "" && lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "ipc: "); ok {
			sock = s
		}
	}
	if sock == "" {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("needle serve did not start: %s", stderr.String())
	}
	go io.Copy(io.Discard, out)
	env.Defer(func() {
		var st struct {
			CommandsServed int `json:"commands_served"`
		}
		client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		resp, err := client.Get("http://needle/api/v1/status")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		cmd.Process.Signal(syscall.SIGTERM)
		werr := cmd.Wait()
		switch {
		case err != nil:
			env.T().Fatal("runtime status: ", err)
		case st.CommandsServed == 0:
			env.T().Fatal("no command of the script ran in the resident runtime")
		case werr != nil:
			env.T().Fatal("needle serve after SIGTERM: ", werr, "\n", stderr.String())
		}
	})
	return nil
}

// cmdExitCode runs a command like exec and checks its exact exit status:
//
//	exitcode N prog [args...]
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdFixture extracts fixtures/repos/NAME.txtar into DIR:
//
//	fixture NAME DIR
func cmdFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fixture NAME DIR")
	}
	ar, err := txtar.ParseFile(filepath.Join("..", "fixtures", "repos", args[0]+".txtar"))
	ts.Check(err)
	for _, f := range ar.Files {
		name := ts.MkAbs(filepath.Join(args[1], f.Name))
		ts.Check(os.MkdirAll(filepath.Dir(name), 0o755))
		ts.Check(os.WriteFile(name, f.Data, 0o644))
	}
}

// cmdJSONGet prints the string value of a top-level key of a JSON file:
//
//	jsonget FILE KEY
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonget FILE KEY")
	}
	var obj map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &obj))
	v, ok := obj[args[1]].(string)
	if !ok {
		ts.Fatalf("jsonget: %s has no string %q", args[0], args[1])
	}
	_, err := ts.Stdout().Write([]byte(v + "\n"))
	ts.Check(err)
}

// cmdSQLExec runs one SQL statement on a SQLite database, bypassing Needle,
// to simulate tampering:
//
//	sqlexec DB STATEMENT
func cmdSQLExec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sqlexec DB STATEMENT")
	}
	db, err := sql.Open("sqlite", ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(args[1])
	ts.Check(err)
}

// cmdGrepEnv sets an environment variable to the first match of a regular
// expression in a file (an id a command printed), or to the match's first
// group when the expression has one:
//
//	grepenv NAME REGEXP FILE
func cmdGrepEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: grepenv NAME REGEXP FILE")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(args[2]))
	if m == nil {
		ts.Fatalf("grepenv: no match for %s in %s", args[1], args[2])
	}
	ts.Setenv(args[0], m[len(m)-1])
}

// cmdExpand writes a copy of a file with $NAME and ${NAME} replaced by the
// script's environment:
//
//	expand IN OUT
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expand IN OUT")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(os.Expand(ts.ReadFile(args[0]), ts.Getenv)), 0o644))
}

// cmdJSONStrip rewrites a JSON object without some top-level keys, indented
// (to compare a report without its latencies with a golden file):
//
//	jsonstrip IN OUT KEY...
func cmdJSONStrip(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: jsonstrip IN OUT KEY...")
	}
	var obj map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &obj))
	for _, k := range args[2:] {
		delete(obj, k)
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), append(out, '\n'), 0o644))
}
