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
// and then, within one wall-clock deadline:
//
//	go list -e -deps -test -json <package>            the checkout's files the binary compiles
//	go list -e -json <cover packages>                 their import paths (none when the
//	                                                  cover package is the test's own)
//	go test -c -json -o <bins>/<key>.test -vet=off -covermode=count -coverpkg=<cover> <package>
//	<sandbox> <launcher> <key>.test -test.run='^TestX$/^sub$' -test.v=test2json
//	        -test.coverprofile=<box>/test.cover -test.timeout=<deadline> …  | test2json
//	<sandbox> <launcher> <key>.test -test.run='^$' …  the baseline: no test at all
//
// The go command runs outside the sandbox and builds the test binary into
// the Runner's directory of binaries (CacheDir/bins, which no sandbox can
// write); the binary runs inside the sandbox through the launcher (below),
// in the tested package's directory as go test runs it (with PWD naming
// it, and GOCOVERDIR set as well as -test.gocoverdir), its output (stdout
// and stderr merged, as go test merges them) turned into go test -json's
// events by the toolchain's own test2json, outside. So listing and
// building, which run none of the module's code (the go command's own
// rule: nothing runs at build time, cgo's flags are checked against an
// allow list), are the only work done outside, and all the module's code
// runs confined. (Trace still runs go test -exec with a script that starts
// the test binary the same way.)
//
// A binary is built once per key: the checkout's directory (the binary
// records its source paths, which a test may read through
// runtime.Caller) and a digest of its source — the module, the package,
// the cover packages, the toolchain, the module mode, the path and
// content of every file of the checkout it compiles, the names of the
// buildable files in each of its packages' directories, go.mod, go.sum
// and vendor/modules.txt. A second test of the same package on the same
// checkout runs the same binary (Result.Built is false): no link, and with
// Spec.Prepared no listing either. A file that changed, appeared or went
// away is a new key, so a new binary with a new digest. A kept binary is
// digested again before each use; one whose file no longer has its digest
// is built anew. A Runner keeps at most 32 binaries (the least recently
// used go first) in a directory of its process, swept once the process is
// gone. A binary the go command built is also kept for later processes in
// CacheDir/testbins under its key and build arguments, with its digest
// (sharedbin.go): a later Runner links it into its own directory, checks
// the digest, and uses it without building; at most 48 are kept there.
//
// Spec.Prepared skips the listings, but not the source digest: a run
// whose checkout's compiled files differ from those its Prepared was made
// from (a test of the earlier run wrote into the checkout) is Errored and
// runs nothing. Spec.Snapshot, the caller's name for the checkout's
// content, lets the Runner keep the baseline per (binary digest, Snapshot)
// and prove each (binary digest, test, cover packages, deadline, limits,
// Snapshot) once: a later or concurrent run of the same waits for the
// first and is answered from it (Result.Memo), in memory, for the Runner's
// life. The baseline is also stored in CacheDir/baselines (baseline.go),
// so a later process running the same binary on the same Snapshot takes
// it from there; what it reads back is parsed like any profile, and a file
// of another key or that does not parse is ignored. The baseline is not
// kept by the binary digest alone: package
// initialization and TestMain may read files of the checkout that are not
// compiled (testdata), which only the caller can vouch for. At most
// Runner.Parallel runs (default: the number of CPUs) execute at once.
//
// The environment is built from nothing: PATH (the toolchain's directory,
// /usr/bin, /bin), HOME (a Needle-owned empty directory, or Runner.Home),
// GOCACHE (Needle's shared one; the test binary's is the run's own box/gocache,
// with GOCACHEPROG reading the shared one),
// GOMODCACHE (the user's), TMPDIR and GOTMPDIR (the run's box, below),
// GOPROXY=off, GOSUMDB=off, GOTOOLCHAIN=local, GOWORK=off, GOENV=off,
// GOTELEMETRY=off and GOFLAGS=-mod=mod (-mod=vendor when the module
// vendors). With -mod=mod every go command gets -modfile naming a scratch
// copy of go.mod and go.sum, so what the go command completes (a missing
// go line, hashes of modules in the cache) never changes the checkout.
// Nothing is fetched: a dependency missing from the module cache is a
// BuildFailed run. -vet=off because go test's vet step refuses some real
// modules' tests under recent toolchains.
//
// The status comes from the test's own events in the -json stream (read
// with bounded lines and a bounded copy of the output, and hashed whole):
// Passed, Failed or Skipped when the named test reached that outcome;
// NoTest when the package built but no such test ran (go test passes such
// a run), or it has no test files at all (go test -c builds no binary);
// BuildFailed when go test -c fails; LimitExceeded when the launcher stopped it past a limit;
// BuildFailed, TimedOut, Errored otherwise. Past the deadline, or when
// the caller's context ends, the process group is killed; the sandbox's
// processes live in a PID namespace and session of their own, which die
// with the namespace's init, not at once. So a command that started a
// sandbox returns only once every process carrying the run's box on its
// command line (the sandbox's init, the launcher, the test binary) has
// died, each waited for through a pidfd: once the init has, the whole
// namespace has, and nothing of the run writes into the checkout any
// more when the caller removes it. The self-test and the builds of the
// probe and the launcher follow the caller's context too: one cut short
// leaves no verdict, and the next run starts it again.
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
// writable exactly the checkout and the run's box: a directory of the
// run's scratch that holds TMPDIR, GOTMPDIR (go test's work directory,
// where it has the test binary write its coverage) and the test binary's
// own GOCACHE; the test binary writes its coverage profile there too.
// Before the first run a Runner runs a probe in the sandbox under the
// launcher (the probe, like the launcher, is built once per toolchain
// into the cache, outside the sandbox, and runs once per process and
// sandbox: a pass stands for the process's life, a failure is probed again
// by the next Runner): TCP connect and listen, UDP, a Unix
// socket connect and listen, and a write outside must all fail, a write
// inside must succeed, and the probe must find the limits set. Until that
// holds every run is Unavailable: nothing is ever run unsandboxed or
// unbounded. The sandbox mounts read-only placeholders for .git, .codex,
// .agents and .aws inside writable roots; killed, it leaves their empty
// directories behind, and Run removes those it created.
//
// Exec runs a command that is not a Go test in the same sandbox, under the
// same launcher, limits and deadline: another language's front end (the
// product reads Python declarations with the repository's interpreter,
// which may be the repository's own .venv). Its directory is read-only to
// it and its box, HOME and TMPDIR, the one place it writes; its input is
// stdin and its output stdout, bounded.
//
// # The build cache
//
// What a run executes must not change what any later run builds or
// trusts: another repository's, or the same repository's after a change
// was reviewed. So the shared GOCACHE (Runner.CacheDir/go-build) is
// written by the go command alone, outside the sandbox, and is read-only
// inside it; a test that runs the go command itself gets a throwaway
// GOCACHE in its box. Every entry of the shared cache is then what the
// compiler made of the source its key names, and Runners of any
// repositories and trust levels may share one cache (the lifecycle's runs
// of an unreviewed patch included) and keep it warm. This was chosen over
// a cache per repository and trust level, which would keep a cache that
// an earlier run of the same repository could have planted entries in,
// and cold ones for every new patch; over a read-only cache with a
// writable overlay through GOCACHEPROG, which needs a cache program
// inside the sandbox and still lets the test binary speak to it; and over
// verifying outputs, which the go command cannot do for an entry it did
// not build (it trusts an output by its index entry). The test binaries
// a Runner keeps (CacheDir/bins) follow the same rule: the go command
// alone writes them, the sandbox only reads them, and each is digested
// again before it runs. The price is that
// the go command runs outside the sandbox: building is the go command's
// own security boundary (it runs none of the module's code), and the
// module cache, read-only to the test binary, is writable to it (it may
// extract a zip already downloaded; GOPROXY=off fetches nothing).
//
// The go command shares no work in flight: builds started at once into
// an empty cache, by one process or several, each compile the standard
// library. So until one build of a class (coldcache.go: the test
// binaries, test2json and scenario programs; the launcher and probe) has
// completed into the cache with this toolchain, the builds of a cache
// take turns on CacheDir/warm.lock (an flock), and the first to complete
// marks the class warm (CacheDir/warm-HASH); later builds run side by
// side.
//
// A test that runs the go command itself (go-internal's testscript tests
// do) builds with GOCACHEPROG set to needle-cacheprog (cacheprog/main.go,
// built like the launcher): it serves what the shared cache holds, which
// the sandbox can only read, and keeps what the test's go command builds
// in the run's box. So such a test no longer compiles the standard
// library into a throwaway cache on every run (make bench, profiled with
// strace: eight runs of go-internal's tests, 1,039 of the run's 1,153
// repeated compiles), and nothing it runs can write what a later
// run trusts. A test that clears GOCACHEPROG builds into the box's
// GOCACHE alone, as before.
//
// # Limits
//
// Every sandboxed command starts with the launcher, a small program
// Needle builds once per toolchain into the cache (like the probe) and
// runs first inside the sandbox: it sets the resource limits of
// Runner.Limits on itself, starts the test binary (or a scenario's
// command), which inherits them, and watches the sandbox's PID namespace.
// The defaults (DefaultLimits), which a real module's tests run under (a
// Go test binary reserves about 1.2 GiB of address space before its first
// allocation; the go command, outside, is not bound by them):
//
//	processes      256     RLIMIT_NPROC in the sandbox's own user namespace (so
//	                       the user's other processes do not count); Linux does
//	                       not enforce it for root, so the launcher also counts
//	                       the namespace's processes every 50 ms and, past the
//	                       limit, kills them all (kill(-1) stays in the namespace)
//	address space  4 GiB   RLIMIT_AS per process: an allocation past it fails
//	                       (a Go program dies "out of memory")
//	file size      1 GiB   RLIMIT_FSIZE per file: a write past it fails (EFBIG)
//	CPU time       2 × deadline  RLIMIT_CPU per process, on top of the deadline
//
// A run a limit stopped is LimitExceeded, its Reason naming the limit (the
// launcher says so on the test's output; a Go program's death out of
// memory is read there too): never certified. The limits are per process
// (memory and files) or per sandbox (processes): total memory is bounded
// only by their product, and the number of files by the disk.
//
// # Files
//
//	runner.go     Runner, Spec, Result, Status, Executed, validation, the environment
//	execution.go  one run: go list, the source digest, classification, the test and the baseline
//	binary.go     test binaries (built once per source and checkout, run in the sandbox through
//	              test2json), kept baselines and outcomes, the Parallel bound
//	baseline.go   baselines stored in the cache for later processes
//	sharedbin.go  test binaries kept in the cache for later processes
//	limits.go     Limits, the launcher (its source and build), reading why it stopped
//	coldcache.go  the builds of a cold cache in turn; GOCACHEPROG for a test's own go command
//	cacheprog/    needle-cacheprog: the shared cache read, the run's box written
//	sandbox.go    Sandbox: the codex command line, the probe, mount-point cleanup
//	exec.go       Exec: a command that is not a Go test, in the sandbox
//	proc.go       subprocesses: process groups, deadlines, bounded stderr
//	events.go     the go test -json stream
//	cover.go      coverage profiles: ParseProfile, ExecutedIn
package testrun
