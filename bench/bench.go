// Package bench is needlebench, the benchmark-and-replay harness. It drives
// the product only through its public API and binaries: it points the
// product's App Server command at a replay server and gives it a fresh data
// directory, and changes nothing else: the product runs unchanged.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/complete"
)

const usage = `needlebench is Needle's benchmark-and-replay harness.

Usage:
  needlebench <command> [arguments]

Commands:
  appserver-replay --transcripts PATH[,PATH...] [app-server]
                    stand in for 'codex app-server' on stdio, serving frozen
                    transcripts (files, or directories of *.jsonl)
  fake-model --script FILE --addr-file FILE
                    serve a loopback Responses API that plays a scripted model
  corpus generate --name NAME [--seed N] [--subjects N] [--out DIR]
                  [--codex BIN | --unsandboxed] MODULE@OLD,NEW...
                    generate a corpus from real Go modules (downloaded
                    through the module proxy) into corpus/NAME: sessions
                    with scripted answers in the natural dialect, and the
                    coverage of every test of every module version, each
                    run on its own inside codex's sandbox (--codex BIN,
                    default codex on PATH; --unsandboxed runs them bare)
  run [--frozen DIR] [--reports DIR] [--trace FILE] [--codex BIN] [--no-refresh] [--tests-cache DIR] CORPUS
                    play a corpus through the product with the replay App
                    Server (frozen/NAME), judge every distinct scripted
                    answer by the truth and by the validators (which run
                    proposed tests in the sandbox of --codex BIN, default
                    codex on PATH; required), and write
                    reports/NAME.{json,md,html} and charts (--trace: every
                    need's outcome as JSONL); exit 1 if any stale answer
                    was returned, a false answer was certified, a worker
                    failed, or hits fall below 99% of the oracle's. At each
                    version bump of a module the product's evidence refresh
                    runs before the next need, as needle mcp serve's
                    background refresh does (--no-refresh: the needs
                    re-prove the evidence they reach, at need time).
                    --tests-cache DIR: the validators' build cache, kept
                    (default: a new one, removed after the run)
  record [--codex BIN] [--out DIR] CORPUS
                    re-record a corpus's frozen transcripts (frozen/NAME)
                    with the real codex binary (default: codex on PATH)
                    and the scripted fake model
  record --codex BIN --repository DIR|FILE.txtar --need FILE --answer FILE [--profile FILE] --out DIR
                    record a frozen evidence-worker transcript with the real
                    codex binary and a fake model that gives ANSWER, under the
                    role profile FILE if given (its worker model and effort)
  record-change --codex BIN --repository DIR|FILE.txtar --scenario FILE --out DIR [--tests-cache DIR]
                    record the worker sessions of a supervised change
                    (prepare_change, then verify_change when the scenario
                    says so) with the real codex binary and a fake model
  record-lifecycle --codex BIN --repository DIR|FILE.txtar --scenario FILE --out DIR [--tests-cache DIR]
                    record the worker sessions of a change lifecycle (explore,
                    implement, review, verify; Needle runs the tests itself in
                    the codex sandbox) with the real codex binary and a fake
                    model, then approve and apply when the scenario says so
  experiment mcp-contract-microbench --mcp-request-file FILE [--codex BIN] [--repository DIR [--evidence FILE]] [--calls N] [--tests-cache DIR] [--reports DIR]
                    time need_context answered as an exact hit, a no-op
                    tools/call and ping on MCP stdio loops (in process; a
                    new session, not timed, before a session's step cap;
                    without --repository, a generated repository whose
                    evidence answers the seed's request); print latency
                    quantiles and sessions, and write
                    reports/mcp-contract-microbench.{json,md} (--tests-cache:
                    the proofs' build cache, default a new one)
  experiment mcp-hit-latency [--needle CMD] [--codex BIN] [--calls N] [--warmup N] [--cold N]
        [--first N] [--first-rounds N] [--first-idle DURATION] [--grow] [--grow-hits LIST] [--grow-artifacts LIST] [--grow-files LIST]
        [--window N] [--baseline-server CMD] [--settle DURATION] [--work DIR] [--tests-cache DIR]
        [--reports DIR] [--server-cpuprofile FILE] [--server-trace FILE]
                    spawn needle mcp serve and time exact hits (each answer
                    verified) against a no-op tools/call and ping on the same
                    connection; --cold N: N spawns of needle and of a minimal
                    go-sdk server to the initialize answer; --first N: the
                    first hit of N new connections (each a new process, idle
                    --first-idle after tools/list), then --first-rounds hits
                    and no-ops on it, and one hit and one no-op each
                    after another --first-idle; --grow: hits after
                    more earlier hits, artifacts and files (--tests-cache:
                    the stores' build cache, default one in the work
                    directory). Writes reports/mcp-hit-latency.{json,md}
  experiment proof-latency [--needle CMD] [--codex BIN] [--rounds N] [--cold N] [--fixture FILE]
        [--tests-cache DIR] [--gocache DIR] [--work DIR] [--out DIR]
                    time a user's focused-test proof (needle evidence propose
                    of fixtures/repos/grepx.txtar's TestCRLF, run in the
                    sandbox of --codex BIN, default codex on PATH; each must
                    be certified by running it) beside a bare go test -cover
                    -count=1 of the same test, in the same run: --rounds N
                    (default 10) with warm build caches (--tests-cache, the
                    proofs' tests.cache, and --gocache, the bare runs'
                    GOCACHE; default new ones, each warmed by an untimed
                    run), --cold N (default 3) in a new data directory
                    against a new GOCACHE. Writes proof ÷ bare and
                    p50/p95/min/max to DIR/proof-latency.{json,md} (--out,
                    default reports)
  demo [--root DIR] [--needle BIN] [--codex BIN] [--tests-cache DIR] [--keep] [--no-serve] [--wait]
                    show Needle without model credentials: in a throwaway copy
                    of fixtures/repos/grepx.txtar and a throwaway data
                    directory (printed; removed at the end unless --keep), the
                    replay App Server plays the real codex's sessions frozen
                    in frozen/worker/grepx and frozen/lifecycle/verified: a
                    need answered by a worker and certified, the same need as
                    a hit, the answer following lines that moved and refused
                    as stale once its code changed, a change lifecycle run to
                    awaiting approval, then needle serve with
                    its login URL. With --wait, or stdin a terminal, it waits
                    for Ctrl-C before stopping the runtime; otherwise it logs
                    in through the URL once and stops (--no-serve: no
                    runtime). --root is the Needle repository (default: the
                    working directory's or the executable's, or a parent);
                    --needle the needle command (default: beside needlebench,
                    else on PATH); --codex the pinned codex whose sandbox runs
                    the change's test (default codex on PATH; it talks to no
                    model); --tests-cache its build cache (default
                    ROOT/.cache/testrun-lifecycle, the lifecycle tests'; kept,
                    so only a first run on a cold cache spends a minute or
                    two compiling the standard library)
  version           print the harness version and the product it drives
  completion bash|zsh|fish
                    print the shell's completion script: in bash, source
                    <(needlebench completion bash); in zsh the same with zsh,
                    after compinit; in fish, needlebench completion fish | source
  help              print this help

Exit status: 0 success, 1 failure, 2 usage error.
`

// Main is the needlebench command; it returns the process exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	h := &harness{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case complete.Hidden: // what the completion scripts run: it reads the help alone
		completionProgram().Complete(args[1:]).Write(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(h, args[1:])
		}
	}
	fmt.Fprintf(stderr, "needlebench: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// commands is needlebench's command table, in the order of its help; a
// command with subcommands (corpus, experiment) dispatches them itself.
var commands = []struct {
	name string
	run  func(h *harness, args []string) int
}{
	{"appserver-replay", (*harness).replay},
	{"fake-model", (*harness).fakeModel},
	{"corpus", (*harness).corpus},
	{"run", (*harness).run},
	{"record", (*harness).record},
	{"record-change", (*harness).recordChange},
	{"record-lifecycle", (*harness).recordLifecycle},
	{"experiment", (*harness).experiment},
	{"demo", (*harness).demo},
	{"version", (*harness).version},
	{"completion", (*harness).completion},
}

// version is needlebench version.
func (h *harness) version(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(h.stderr, "needlebench version: takes no arguments")
		return 2
	}
	fmt.Fprintf(h.stdout, "needlebench %s\nproduct definition %s\n", product.Version(), product.DefinitionID())
	return 0
}

type harness struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	// sawFlags, when set, is given each flag set flags makes: the
	// completion test holds them to the help.
	sawFlags func(*flag.FlagSet)
}

// flags returns a silent flag set; parse reports errors with the usage.
func (h *harness) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("needlebench "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if h.sawFlags != nil {
		h.sawFlags(fs)
	}
	return fs
}

func (h *harness) parse(fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n\n%s", fs.Name(), err, usage)
		return false
	}
	return true
}
