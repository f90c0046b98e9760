// Package testrun proves test reach by execution: it runs one Go test of a
// disposable checkout in a sandbox, with coverage of the subject's package,
// and answers whether any statement inside a span of a file ran. Needle's
// focused_tests validator uses it; the package knows nothing about needs or
// artifacts.
//
// # A run
//
// Run validates the Spec (a test name, never a flag or a pattern; package
// paths that stay in the module), makes sure the sandbox works (below),
// and then, inside the sandbox and within one wall-clock deadline:
//
//	go list -e -json <cover packages>                 their import paths
//	go list -e -deps -test -json <package>            the checkout's files the binary compiles
//	go test -json -run '^TestX$/^sub$' -count=1 -vet=off -covermode=count
//	        -coverpkg=<cover> -coverprofile=… -timeout=<deadline> <package>
//	go test … -run '^$' …                             the baseline: no test at all
//
// The environment is built from nothing: PATH (the toolchain's directory,
// /usr/bin, /bin), HOME (a Needle-owned empty directory, or Runner.Home),
// GOCACHE (Needle's), GOMODCACHE (the user's, read-only), TMPDIR and
// GOTMPDIR (the run's scratch directory), GOPROXY=off, GOSUMDB=off,
// GOTOOLCHAIN=local, GOWORK=off, GOENV=off, GOTELEMETRY=off and
// GOFLAGS=-mod=mod (-mod=vendor when the module vendors). With -mod=mod
// every go command gets -modfile naming a scratch copy of go.mod and go.sum,
// so what the go command completes (a missing go line, hashes of modules
// in the cache) never changes the checkout. Nothing is fetched: a dependency missing from the module cache is a BuildFailed
// run. -vet=off because go test's vet step refuses some real modules'
// tests under recent toolchains.
//
// The status comes from the test's own events in the -json stream (read
// with bounded lines and a bounded copy of the output, and hashed whole):
// Passed, Failed or Skipped when the named test reached that outcome;
// NoTest when the package built but no such test ran (go test passes such
// a run); BuildFailed, TimedOut, Errored otherwise. Past the deadline the
// process group is killed; the sandbox's processes live in a PID namespace
// that dies with it.
//
// # Executed
//
// A test binary also executes package initialization and TestMain, whatever
// test it runs. The baseline run of the same binary with no test counts
// exactly that, so Executed counts a block as executed by the test only when
// the test's profile counts it more often than the baseline's (covermode
// count). A block counts when it lies entirely within the asked lines. A
// file outside the cover packages is an error, not "not executed". This is
// execution, with its limits: a run shows what one run did (a test whose
// path depends on timing or the environment may differ from run to run).
//
// ExecutedAt asks the same of one position (a statement that reads a
// value): a block holding it ran more often than in the baseline.
//
// What a run learns besides its test — the cover packages, the compiled
// packages and the baseline — is the same for every test of a package on
// one snapshot: Result.Prepared hands it to the next run (Spec.Prepared),
// which then runs only its test.
//
// # The sandbox
//
// Sandbox is the pinned codex's `codex sandbox` (bubblewrap with a read-only
// /, new user, PID, IPC and network namespaces, and a seccomp filter that
// denies creating sockets other than AF_UNIX and connecting or binding
// those), given a permission profile on its command line that makes
// writable exactly the checkout, Needle's GOCACHE and the run's scratch
// directory. Before the first run a Runner builds a probe and runs it in
// the sandbox: TCP connect and listen, UDP, a Unix socket connect and
// listen, and a write outside must all fail, a write inside must succeed.
// Until that holds every run is Unavailable: nothing is ever run
// unsandboxed. The sandbox mounts read-only placeholders for .git, .codex,
// .agents and .aws inside writable roots; killed, it leaves their empty
// directories behind, and Run removes those it created.
//
// The GOCACHE is writable to the test binary too (tests that run the go
// command need it): a test could plant entries in it. Keep one GOCACHE per
// repository so that a test can only affect runs of its own repository.
//
// # Files
//
//	runner.go     Runner, Spec, Result, Status, Executed, validation, the environment
//	execution.go  one run: go list, go test, classification, the baseline
//	sandbox.go    Sandbox: the codex command line, the probe, mount-point cleanup
//	proc.go       subprocesses: process groups, deadlines, bounded stderr
//	events.go     the go test -json stream
//	cover.go      coverage profiles: ParseProfile, ExecutedIn
package testrun
