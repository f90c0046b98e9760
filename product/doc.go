// Package product is Needle's product core: the one package that knows what a
// need, an obligation, a piece of evidence, a worker or a change is. The
// needle command (cmd/needle) is a thin main around Main, and the
// benchmark harness (package bench) drives this package only through its
// public API and binaries. Domain-free mechanism lives in product/internal
// leaves (content ids, the SQLite migrator, …), which never import product.
// The file map at the end says where each concept lives.
//
// # Pipeline
//
// A main coding model asks for a typed need through MCP (need_context, JSON)
// or by writing a @@need marker line that the Codex Stop hook or needle
// exec picks up. Both are untrusted input and decode into the same
// NeedRequest; MCP never parses markers and markers are never tool
// arguments.
//
//	transport input (JSON or marker)
//	-> compile typed need (Compile: pure, closed input, typed errors)
//	-> freeze subject, world, obligations, route snapshot
//	-> exact request lookup by need_id
//	-> artifact and claim candidate lookup
//	-> freshness and contradiction checks
//	-> predicate satisfaction and proof replay
//	-> valid plan set -> economic selection
//	-> hit, partial worker request, fresh worker, or bypass
//	-> bounded FrontierView -> main continuation
//
// Engine (Open, NeedContext, Propose) runs the whole pipeline in process.
// Workers plug in through workerPort; without one (or with CacheOnly) a need
// the evidence cannot answer is a typed bypass.
//
// # Compilation and identity
//
// Compile turns a NeedRequest into a needIR: the route, the subject
// {kind, name} with the name in Unicode NFC, the obligations (capability
// kind, required or preferred, and the facets that qualify it) sorted by
// capability kind, and the world {source, platform, features}. The route's
// minimum obligations are merged in: a missing kind is added as required, a
// preferred one is promoted, a facet the minimum names is filled in when
// omitted, raised when it is an ordered facet set weaker by the caller
// (selection primary < representative < exhaustive, completeness
// open_world < contract_complete, granularity summary < stepwise), and must
// agree when unordered (polarity, scenario). No other facet is ever invented:
// an omitted facet is unconstrained.
//
//	route                  minimum
//	locate.implementation  implementation_location(selection=primary)
//	trace.state-flow       implementation_location(selection=primary) + runtime_flow(scenario=default)
//	tests.relevant         focused_tests(selection=representative)
//
// The need_id is "b3:" + hex BLAKE3-256 over the tag tagNeed, a zero
// byte and the canonical JSON of the needIR (sorted keys, no insignificant
// white space, NFC strings). The task text is carried for the worker prompt
// but is not part of the IR, so rewording it, reordering keys or obligations,
// or spelling out defaults never changes the id; any change of meaning does.
// The semantic-definition id (DefinitionID) hashes the route table, the
// capability and facet tables, the subject kinds and compilerVersion.
//
// Input is closed at every level: unknown fields, duplicate JSON object keys,
// wrong JSON types, trailing data, invalid UTF-8, duplicate capability kinds,
// a kind both required and preferred, a facet the kind does not take, an
// unknown enum value, a disabled route, a malformed digest, an empty or
// oversized subject, too many obligations and an oversized task are each a
// KindInvalidInput *Error whose Path is the JSON path of the offending value
// ("required[1].granularity"). The bounds are in bounds.go.
//
// # The @@need marker
//
// A marker is one line that a main model writes in its message. It carries
// exactly what a need_context request carries, and ParseMarker yields the
// same NeedRequest as the JSON twin, so both compile to the same need_id.
//
// A model also shows markers it does not mean: it explains the syntax in a
// code block or quotes the user. So a marker is a line the message says at
// its top level, read as CommonMark block structure (messages are rendered
// as Markdown; product/internal/mdblock): markerLines takes the lines
// of paragraphs (and setext headings) that are direct children of the
// message and start with "@@need", after at most three spaces, followed
// by a blank or the end of the line. So these are not markers: a line in a
// fenced code block (an unclosed fence runs to the end of the message), in
// an indented code block (four spaces or a tab), in an HTML block, in a
// block quote or in a list item — including a lazy continuation line
// right after a quote or an item without a blank line between — and
// inline code or a heading ("# @@need …"). A paragraph continuation line
// indented by four or more columns is not one either. Lines that are not
// markers do not count, so a fenced example next to one real marker is one
// request. findMarker wants exactly one; none, or more than one, is
// invalid input.
//
//	I need the implementation first.         prose
//	@@need locate.implementation symbol:Greet  a marker
//
//	```
//	@@need locate.implementation symbol:Greet  shown in a fence: not one
//	```
//	> @@need tests.relevant symbol:Greet       quoted: not one
//	- @@need tests.relevant symbol:Greet       a list item: not one
//
//	marker     = "@@need" blanks route blanks subject *( blanks clause ) [blanks]
//	route      = word                          ; e.g. trace.state-flow
//	subject    = kind ":" value                ; kind is [a-z_]+, e.g. cli_option:--crlf
//	clause     = obligation / setting
//	obligation = ( "+" / "?" ) word [ "(" facet *( "," facet ) ")" ]
//	                                           ; + required, ? preferred, in order
//	facet      = word "=" word                 ; e.g. selection=primary
//	setting    = "source=" value / "platform=" value / "task=" value
//	           / "features=" word *( "," word )   ; "default" or a sorted list
//	value      = word / quoted
//	word       = 1*( any character but blanks, control characters and " ( ) , = )
//	quoted     = DQUOTE *( character / "\" ( DQUOTE / "\" / "n" / "t" ) ) DQUOTE
//	blanks     = 1*( SP / HTAB )
//
// For example, the twin of fixtures/need-context.json:
//
//	@@need trace.state-flow cli_option:--crlf +implementation_location(polarity=positive,selection=primary) +runtime_flow(scenario=default,completeness=contract_complete,granularity=stepwise) ?focused_tests(polarity=positive,selection=representative,completeness=open_world) task="Trace how --crlf changes matching and search line terminators."
//
// Each setting may appear once. Errors name the JSON path of the equivalent
// need_context field (or "marker" for pure syntax) and the column.
// FormatMarker writes the canonical marker of a request.
//
// # Evidence and trusted validation
//
// A Proposal is typed evidence that a worker (a model) or an operator
// proposes: an implementation_location {path, start_line, end_line}, a
// runtime_flow {scenario, steps of path, lines and summary} or focused_tests
// {tests of path, name and, as a hint only, a command}. It is decoded as
// strictly as a need ("./x.go" is cleaned to x.go; a path leaving the
// repository is invalid input) and believed only after the validators,
// which are code, never a model, check it against the exact source
// (validate*.go).
//
// Reading: a cited file must be a regular file of the snapshot named by its
// own path: a path through a symbolic link (wherever it leads), an ignored
// file, anything in .git, a file larger than maxCitedFileBytes (8 MiB) and a
// path the file system refuses (a 300-byte name, a loop) are rejections with
// a reason, recorded like any other, and nothing of such a file is stored.
//
// Go is proven with go/types over the snapshot (product/internal/typecheck;
// dependencies from the module cache, a module-less repository under the
// import path its own tests use). A symbol "T.M" is the method M whose
// receiver's base type is T in the cited file's package — never a field, a
// type or another package's name of that spelling; a bare "M" that no
// package-level declaration has is the package's one method of that name.
// A location is certified when its span is natural for the declaration:
// starting at the declaration or its doc comment, ending on its last line or
// one past; a span that starts so but ends inside the declaration (the
// signature only) locates it, and Needle records the whole declaration
// instead. A cli_option or configuration_key is defined where a
// definition's name evaluates, as a Go constant, to the name (a literal, a
// named constant, a constant expression, a rune for a short flag) or is
// written in a struct tag: the name argument of a definition function
// (flag, pflag, getopt, kingpin's Flag, os.Getenv, viper's keys, and any
// package's function named for flags or options that takes a name and a
// usage — never kingpin's Command or Arg), a Name, Aliases or EnvVars
// field of a flag struct literal of any library (urfave/cli v1-v3, kong),
// or a field of a flags struct named by its kong, go-flags or go-arg tags
// or by its name (the field's line). Any other string equal to the name is
// a use, and a definition in a _test.go file (a test FlagSet's own flag)
// is never the implementation of an option, whatever else the package
// defines. Options implemented without a definition — a parser of its own
// comparing names (case "help":), a key written as a named constant and
// used as a map key — are only candidates (typecheck.ImplicitOptions),
// which a run must show deciding before anything is certified: run by a
// test given the option, and by no test of the run not given it (a block
// that runs either way decides nothing on it). A proof that needs types the
// module cache lacks is undecided, naming them (below).
//
// Python declarations are proven by Python's own parser
// (validate_python.go, product/internal/pydecl): the ast module of the
// repository's interpreter (python.interpreter; else the interpreter its
// .venv links to, when that lies outside the repository, run by its real
// path so that no pyvenv.cfg of the repository's configures it; else
// python3 on PATH) reads the cited file's content from the snapshot, on
// stdin, in the tests' sandbox. The ast module was chosen over tree-sitter-python: it is
// the grammar of the very Python the repository runs (a tree-sitter
// grammar lags new syntax and knows no version), it needs no cgo, so go
// install keeps working on any machine, and the sandbox it needs is the
// one that already runs tests; the price is a process per file, memoized
// by content (for click's core.py, 2,998 lines: 0.03-0.06 s with Debian's
// python3 outside the sandbox, 0.14-0.37 s through a pyenv shim inside
// it; /usr/bin/time). The trust rests on the interpreter: it lies
// outside the repository (or the user named it), runs isolated (-I -S:
// nothing of the repository is imported, and the source is only parsed),
// and runs in the sandbox all the same. Its output is still parsed as
// untrusted (pydecl.Parse), and every declaration a proof uses, with the
// declarations enclosing it, is checked against the source (its line
// defines the name: def, class, or an assignment whose targets bind it;
// its first decorator line is a decorator; no declaration at its level
// inside its block, and its block ends where it says: pyAgrees); an answer
// the source does not bear out leaves the proposal undecided. That check
// is a consistency check, not a second parser: it catches an interpreter
// that reports the wrong file or lies crudely, and it cannot tell a def
// inside a string literal from one outside. Names are read as Python writes
// them: a dotted module path's suffix may qualify them (pkg.mod.Class.method,
// mod:Class.method), a __qualname__'s <locals> and a trailing "()" are
// dropped, a nested function is outer.inner, a property's getter and
// setter are both Class.name, and a bare name that no module-level
// declaration has is the one class's method of that name. A test subject
// must be what pytest or unittest collect with their defaults (test* in a
// test_*.py or *_test.py file, a method test* of a class Test* there, or
// of a *TestCase in such a file or a test*.py one), named by its
// qualified name or its pytest node id (path::Class::test, the path being
// the cited file's; a [param] for a test a parametrize mark decorates).
// A node id relative to a directory below the root, and a [param] on a
// test no mark parametrizes (a parametrized fixture may make one), are
// undecided: pytest's rootdir and fixtures are not read. The collection
// rule is static (pytest is not run), and the certificate's notes say so. The span rule is Go's: from the def, class or assignment
// line, or from or inside its decorators, to its last line (or the
// comments that trail its block, as Python's inspect counts them), or the
// signature alone for the whole. Without an interpreter or a sandbox, and
// for a file with a carriage return that ends no line (Python counts it as
// a line break, Needle does not), the lexical rule stands in for
// declarations, labelled lexical, with a note saying why. An interpreter
// that runs and gives no answer (it fails, times out, prints what Parse
// refuses) leaves the proposal undecided, and so does a syntax error from
// python3 on PATH, which may be another Python than the repository's; the
// repository's or the configured interpreter's syntax error is a
// rejection.
//
// Python options and keys are known by meaning (validate_python_option.go):
// the same parser run reports the calls and reads that define a flag or
// an environment variable, each named by a string constant —
// argparse's add_argument and its parsers' own -h/--help, optparse's
// add_option, click's option decorators, Option class and envvar, typer's
// parameters (an Option default or Annotated metadata, or any parameter
// with a default of a typer command: user_name is --user-name, a bool's
// also --no-user-name), and reads of os.environ (subscript, get,
// setdefault, pop, in) and os.getenv. A write to os.environ, a help text,
// a test passing the flag define nothing; a definition in a test file
// defines it for tests only. The interpreter's report is checked against
// the source (the name quoted there, the API's word there); that the call
// is argparse's or click's is judged by its name and the imports, so the
// certificate says static.
//
// Python focused tests are run (validate_python_tests.go,
// product/internal/pytestrun): pytest under coverage.py, with the
// repository's interpreter, in the sandbox on a disposable checkout, one
// node id at a time; reach is a line the import never runs (a function's
// body, a method's, a command's body for a click option or typer
// parameter, an environment read inside a function). Coverage.py was
// chosen over a trace of our own: it is what Python projects measure
// with, its C tracer costs little, and it reports lines as Python numbers
// them. pytest and coverage are the interpreter's; Needle installs
// nothing. A flow all in Python is proven the same way
// (validate_python_flow.go): its scenario (a pytest node id, or python -m
// pkg / python file.py with arguments) runs with a profile hook recording
// every call into or out of the steps' files, and each step must be
// entered from a call site in the one before, in order, and the last
// step's lines run; there is no static proof to fall back on, so a
// scenario Needle cannot run leaves it undecided.
//
// A validation has three outcomes: certified, rejected (proven false) and
// undecided — the proof needs what this machine lacks: types of a
// dependency missing from the module cache, a working sandbox, a Go
// toolchain, a run within its deadline. An undecided proposal is kept in
// undecided_attempts with its causes, never in attempts (so never counted
// or reported as a rejection) and never served; a need about its subject
// that lacks its kind tries it again first (once per engine), and the
// attempt that decides it is linked to it. A worker's proposal that is
// undecided makes the need a bypass whose resolution lists the causes.
//
// Code a run executes cannot change what a later run builds or trusts:
// the go command lists and builds outside the sandbox (building runs none
// of the module's code) and alone writes the build cache, which is
// read-only inside the sandbox, where the test binary runs (a test that
// runs the go command gets a throwaway cache). So every repository's runs,
// and a lifecycle's runs of an unreviewed patch, may share one warm cache
// (DATA_DIR/testrun, per repository for focused_tests, or tests.cache)
// without a test planting an entry another run would trust; the choice,
// against a cache per repository and trust level, a GOCACHEPROG overlay or
// verifying outputs, is argued in product/internal/testrun's doc ("The
// build cache"). Every sandboxed process runs under resource limits set
// before the test binary starts (testrun.DefaultLimits: 256 processes,
// 4 GiB of address space, 1 GiB per file, CPU time twice the deadline),
// on top of the deadline; a run a limit stopped (testrun.LimitExceeded) is
// undecided, naming the limit, never certified.
//
// A runtime_flow is for a scenario, and it is proven by running it
// (validate_flow*.go). Statically, a step holds the subject (its
// declaration, a definition of the option or a read of its value: a flow
// may start at it or lead to it) and each step calls into the next: a callee go/types resolves, declared in
// (or entered by) the next step, or a call go/types cannot name (an
// interface method, a function-typed variable or field) that a run may
// tie to it; a step with neither, or a name alone, is a rejection. Then
// the scenario runs in the sandbox of the focused tests, in a disposable
// checkout instrumented with probes (testrun.Trace): the entry of every
// function a step declares or lies in records the call site that entered
// it, as the runtime reports it, and the first statement of each step
// records that it ran. The flow is executed when step i+1 is entered from
// a call site in step i after the link before it (for a link by function
// reference, step i ran and then step i+1 was entered), and the last
// step's lines ran, all within one test. Instrumentation was chosen over
// coverage of the call-site blocks (coverage shows a call site ran, not
// which function it entered, so it cannot prove a link through an
// interface or a function value, nor an order) and over a tracer (ptrace
// or uprobes need privileges the sandbox takes away, and runtime/trace
// records no call sites); the probes add no line, so the runtime's lines
// are the source's. The scenario is the proposal's when Needle can run it
// — a test, or a command of a main package with its arguments, read as
// models write them — else Needle tries the tests of the steps' packages
// and records which it ran. A named scenario that runs without the flow is
// a rejection. A flow no run shows whose every link go/types resolves is
// certified static: labelled so, open_world only, never contract_complete
// (TestsConfig.NoStatic refuses it). A run that is needed and impossible
// makes the flow undecided.
//
// A focused test reaches the subject only if Needle, running it itself,
// sees it execute the subject's code: each Go test runs as `go test
// -run '^TestX$'` would (subtests as TestX/case) in a disposable checkout of the
// exact snapshot (one per snapshot: a proposal's checkout is kept for the
// next proposal on the same snapshot and taken only when it still verifies
// to hold exactly it, up to one per CPU, removed when the engine closes; it
// lies in the test cache, TestsConfig.CacheDir/checkouts, so that data
// directories sharing the cache share its compiled packages; runner.go),
// its binary inside the sandbox of the pinned codex (no
// network, writes confined to the checkout and the run's scratch, a
// deadline, resource limits, -vet=off, GOPROXY=off; product/internal/
// testrun), with coverage of the subject's package, and passes; coverage must show, beyond what package
// initialization runs, a statement of the subject's body (a function or
// method; for a type, one of its methods; for a file, any of its code) or,
// for a cli_option or configuration_key, of the code that reads its value:
// the variable or field its definition binds (a flag literal's
// Destination, a flags struct's field), a look-up by name (GetBool("x"),
// Changed("x"), viper's Get…, urfave/cli's c.Bool("x")), the Set method of
// its flag.Value (or a field type's Decode, UnmarshalFlag or kong hook), or
// the environment read itself, or a look-up by one of the flag's own names
// taken from its definition (for _, n := range HelpFlag.Names() {
// c.Bool(n) }, HelpFlag.Names()[0], a slice literal of its names, where
// HelpFlag holds the definition's literal). Executing a flag's definition
// alone (building a command) is not reach; a look-up through names no
// definition gives (a loop over every flag's names, a name split at run
// time) is not found statically, so it shows no reach. The certificate records, per test, the status,
// duration, toolchain, output digest and the label executed; its
// dependencies are the files the test binary compiled (so a replay re-runs
// the test only when one of them changed). Runs are cached per snapshot;
// the runner builds each package's test binary once (go test -c, outside
// the sandbox) and runs the binary itself in the sandbox for each of its
// tests, keeps its baseline per snapshot and proves a (binary, test,
// snapshot) once, however many proposals ask at once (product/internal/
// testrun, "A run"); a run's scratch directory belongs to its process,
// and a killed process's is swept by the next run. A proposal's first
// test starts running beside its type check, as its path says it will
// run; its outcome counts only when the type check then names that run
// (run_ahead.go; it is never cancelled halfway).
// A subject declared in a _test.go file, which coverage does not
// instrument, is traced instead: the test must run a statement of its
// body. Static reach is never a proof: where Needle cannot run the test
// (no sandbox configured or usable, no Go toolchain, a deadline, a
// missing dependency) the proposal is undecided, a chain of type-resolved
// calls named in its cause as advisory; a failing test or one that does
// not build is a rejection. The
// command Needle serves is its own (package and test name through
// testrun.RunPattern); the proposed one is never kept or served. Focused
// tests are never exhaustive.
//
// A proposal is decoded as its JSON Schema (the worker's outputSchema)
// allows: only what the schema refuses (a wrong type, a missing or unknown
// field, an unknown enum value, a line below 1, too many or no steps or
// tests) is invalid input. Free text is normalized (one line, clipped to
// its bound); a value the schema allows that no proof accepts (a path
// leaving the repository, a backwards or oversized span, a test name that
// is no name) is kept as a problem that rejects the proposal before
// anything is read.
//
// Other languages get lexical evidence only, labelled so: a location needs
// a line shaped like a definition in the file's language (def, fn,
// function, class, impl, …) of the whole qualified name, its qualifiers
// being enclosing containers (or the file's module); prose never defines
// anything; a non-Go test needs its name defined in its file and the
// subject named there, and is served without any command. Behavior
// subjects cannot be verified and are rejected. No proposal can certify
// negative polarity (an absence) yet: such obligations are always missing,
// and no worker is asked for them. A failed proposal is stored as a rejected
// attempt with its reasons and never served.
//
// A certified proposal becomes an artifact (content id of the proposal) with
// a certificate that binds it to the facets it satisfies, the validator
// version and level, the exact text of every cited span, its claims and its
// dependencies: the content digest of every file the validator read. Claims
// are atomic facts ("NewSearcher is declared in search.go", "step 1 calls
// newOptions") whose ids carry no line numbers. None of these ids depends on
// where the repository lives (dependencies are repository-relative): two
// clones sharing a data directory certify the same evidence as the same
// rows, find evidence by subject and need whichever clone stored it, and
// check its freshness against their own files. Only attempts, resolutions,
// sessions, changes and the stat cache belong to one checkout.
//
// uncertifiable (evidence.go) is the one table of what no proposal can
// certify — a behavior subject, negative polarity — shared by the
// validators (which refuse such a proposal before reading) and the
// resolver (which never asks a worker for it).
//
// # Freshness and proof replay
//
// Evidence is fresh exactly when every dependency digest is unchanged and
// it was certified by the current validatorVersion (older evidence is
// replayed before it is served). The
// check reads only the dependencies, through a persistent stat cache
// (size, mtime, ctime, inode -> digest, in the store) that, like git's index,
// never trusts an entry recorded within RacyWindow of the file's last change;
// its cost does not grow with the repository. A directory listing's digest
// is validated the same way, by the lstat of what git's listing of it
// depends on (product/internal/snapshot). When a dependency changed, the
// proof is replayed: each cited span is looked up in the current file,
// unchanged at the same place or intact at exactly one other place; the
// proposal is moved there and validated again from scratch. Success is a new
// certificate (and, if lines moved, a new artifact whose origin is the old
// one, which it supersedes) with the same claims; anything else is stale.
// Unreadable dependencies count as changed: unknown validity is never
// served. The certificate a need reads is the one proven last: when the
// source goes back to a version it had, the replay proves an earlier
// certificate (and artifact) again, and that one becomes the newest and
// current again, so a branch switched there and back replays once, not on
// every ask.
//
// Replays need not wait for a need: Refresh (refresh.go; needle evidence
// refresh) re-proves the evidence of a checkout whose files changed and
// renews the need certificates of the needs asked there, with the same
// validators and resolver; Warm then readies a serving engine's memory for
// those needs. needle mcp serve also readies its engine once it opens
// (WarmOpen, main_mcp.go: Warm and the estimates a hit is priced with, read
// in the background, one need per turn), so that a connection's first hit
// costs what a later one does. needle mcp serve runs both in the background
// (refresher.go): on an engine of its own at a lower CPU priority, one
// --refresh-interval after it starts and then whenever the lstat of a
// dependency changed (new certificates only widen the watch), comparing
// the dependency digests first and refreshing only when one no longer
// holds.
//
// # Resolution
//
// resolve (pure) decides from classified candidates; the Engine does the
// effects before (freshness, replay) and after (workers, storage). The
// kinds: exact_hit (the same need_id, answered before, every member of its
// need certificate still usable), coverage_hit (one artifact covers every
// required obligation), composite_hit (several do), claim_hit (a claim drawn
// from other evidence answers where a symbol is implemented), partial_hit
// (some obligations from evidence; a worker is asked only for the missing
// ones, or they are listed as missing), miss (nothing reusable; a fresh
// worker answered), stale, rejected (the worker's proposal failed
// validation), ambiguous (several distinct claimed locations for a primary
// selection), contradicted (fresh certified artifacts of a primary location
// or a flow disagree) and bypass. The last five carry no artifact, claim or
// citation: their context is a one-line reason. Preferred obligations are
// served when evidence has them and never spawn a worker.
//
// Each answer has a plan: an acyclic DAG of at most maxPlanNodes operators
// (reuse, replay, reuse_claim, worker, validate, assemble). Among valid plans
// (the evidence plan and, with a worker, the all-worker plan) the cheapest by
// expected cost is chosen. Costs are running aggregates (count, mean and
// M2 by Welford's recurrence) per operator, pooled and per capability served
// (operator_costs), folded in O(1) per observation: pricing costs the same
// after any number of answers. A node is priced from its capability's
// aggregate once that has minObservations observations, else from the
// operator's pooled one; with fewer than minObservations observations of an
// operator reuse is reported as advisory.
// Evidence whose reuse cost is not yet observed is reused: a worker replaces
// usable evidence only when it is reliably cheaper than a known reuse cost.
// Price orders valid plans; it never makes a plan valid.
//
// The world rule: evidence is certified against the checkout's current
// source, on the running platform, with the default build features, and a
// need is answered from it only in that world. A need whose world.source is
// another snapshot, whose platform is another one or whose features are
// not the default is a bypass that names the world (Needle keeps no
// recorded snapshot to answer on), never current-source evidence.
//
// A session ledger classifies each need against the earlier ones of its
// session: repeat, residual (only what an earlier need left missing),
// extension, overlap, independent or incompatible (same subject, conflicting
// world or facets). An incompatible need is a bypass naming the earlier
// step (and stays one when asked again). Limits default to 3 needs (repeats
// are free) and 3 workers, with a hard cap of 8, and every call counts
// toward HardSessionSteps (64), repeats included; past a limit a need is a
// normal bypass. One resolution runs at a time; the others wait in arrival
// order. A repeat adds nothing to the ledger (one entry per distinct need
// and outcome). The worker request of a residual or extension need names
// its session and the earlier needs it is one of (ledger.continues), so a
// worker may continue the thread that answered them (Workers below).
//
// An exact hit reads no evidence and writes nothing while the client waits.
// The engine remembers, per need, the classified candidates its last
// resolution decided from when all of them were fresh (needMemo). While no
// certificate was stored since (the newest certificate's rowid, one read:
// evidence is never deleted) and each of their dependencies has the same
// digest through the stat cache, gather would find the same candidates in
// the same states, so resolve runs on the remembered ones and decides the
// same (a contradicting certificate is a new certificate). An exact hit's
// need certificate is not written again; its accounting is written after
// the answer (Durability below).
//
// The FrontierView is the context text: deterministic, bounded by a byte
// budget (default 6 KiB) by dropping whole lines, citing every location as
// path:start-end, flow steps in order with the callees Needle resolved
// between them, tests with how their reach is known (executed, static,
// lexical) and Needle's own run command, and the artifact and claim ids.
// What a worker wrote freely (a step's summary) appears only quoted and
// labelled as the worker's unverified description. result_digest is the
// content id of the structured result. Every other face labels worker text
// the same way: needle change show and events quote a reviewer's finding,
// a verifier's reason and a failed run's report as the worker's words
// (unverified), and the API carries such text only as a web.WorkerText
// ({text, unverified: true, source: "worker"}), which the UI shows as the
// worker's, unverified.
//
// # Workers
//
// The Codex App Server evidence worker (worker_codex.go) implements
// workerPort. Per request it makes a disposable checkout of the exact
// snapshot (product/internal/checkout: a git worktree plus the dirty
// overlay, or a copy; its digest is verified after creation and after the
// worker; cleanup is verified; any failure fails closed; a checkout whose
// process died is swept when the next worker backend opens, and one its
// process removed meanwhile is nothing to sweep), a private
// CODEX_HOME, and starts `CMD app-server` (product/internal/appserver) in its
// own process group with a scrubbed environment. One ephemeral read-only
// thread (approvalPolicy never, web search, sub-agents and plugins pruned)
// carries the invocation identity, the content id of everything the prompt
// depends on; one turn per missing obligation carries a bounded prompt and
// the proposal's strict JSON Schema as outputSchema. The role profile's
// worker model rides on thread/start and every turn/start, its effort on
// every turn/start (neither when unset, and then the invocation identity is
// what it always was). A turn past its deadline is interrupted, then the
// process group killed. Every server request is
// answered (approvals declined). The final message goes through
// decodeProposal and validate like any proposal; token usage (deltas of the
// thread's total) is recorded in worker_runs and as an economic
// observation. With CodexConfig.RecordDir set, each session is frozen into a
// transcript (product/internal/transcript) that the replay server
// (product/internal/replay; product/codextest and needlebench
// appserver-replay run it) can serve in
// place of codex, choosing the session by the worker's invocation identity.
//
// Worker continuation (worker_continue.go; CodexConfig.Continue, the
// worker.continue setting, on by default for the CLI's engines: needle mcp
// serve, exec, the hook; off with worker.continue off; a Config built in
// Go has it off unless set, as needlebench's corpus play, whose frozen
// transcripts are fresh threads). With it, an evidence worker
// is kept after its request: its App Server process, its ephemeral thread
// and its verified checkout, at most one per engine (an MCP connection has
// its own engine), closed when the engine closes, after CodexConfig.Idle
// (default 2 minutes) without a request, or when another request does not
// continue it. Ephemeral threads cannot be resumed in another process, so
// the process is what is kept, and a continuation is a new turn/start on
// the same thread id. A request continues it only when it is of the same
// session, a residual or extension of a need the thread answered, under
// the same worker model and effort, the process is still running, and the
// repository's snapshot now is the very snapshot of the checkout the
// thread read; otherwise the kept worker is closed and a fresh thread is
// started in a fresh checkout. A kept checkout that no longer verifies
// (changed while idle) fails the request closed: no turn runs on it. The continued turns ask only for the
// missing obligations (the prompt of each, told that the checkout is the
// one it already read). The request is charged what the thread's token
// total grew by; the checkout is verified unchanged after every request,
// and any failure closes the worker (a failed cleanup fails closed, and
// one that failed off any request fails the next and Close). The answer
// goes through the same decodeProposal and validate as any proposal. The
// whole process's session is recorded under the first request's
// invocation, so the replay server finds it by the kept home's name.
//
// # MCP
//
// ServeMCP (needle mcp serve) speaks MCP 2025-06-18 and 2024-11-05 over
// stdio through product/internal/jsonrpc: bounded lines (an over-long line
// is an error and the server stays up), initialize before tool calls (ping
// excepted; lines behind initialize wait for its answer), -32700 for
// unparsable lines, -32601 for unknown methods (server/discover included),
// duplicate request ids refused for the whole session, tool calls one at a
// time in arrival order, notifications/cancelled bound to the request id
// (the worker's turn is interrupted and its process group killed; the run
// and its cleanup are recorded), and at stdin EOF every accepted request is
// answered before the server exits; SIGTERM and SIGINT stop it with status
// 0 once running requests are cancelled and cleaned up. A request the
// client cancels is never answered. At most maxMCPInFlight (64) requests
// are in flight (running, queued, or writing their answer); one more is
// answered -32001 "server overloaded" by the reader itself, so a client
// that never reads its answers stops being read instead of growing the
// server. The envelope and the params of
// initialize, tools/call and the cancellation are read by one strict
// reader (exact member names, none twice, valid Unicode), a request sent
// without an id does nothing, and ids follow one rule (a string, or an
// integer within ±(2^53-1), identified by value); see the jsonrpc package
// doc. initialize freezes the session: repository, role-profile revision
// (its limits, worker model and effort), routes (mcp serve --routes),
// semantic definition, main model, worker policy and protocol
// (session_freezes), and the digests of its transport's contract and of
// the prompt profile (session_digests; below, "Session digests"). needle mcp serve opens its store, settings and role
// profile while the connection starts, once: initialize is answered
// without waiting for them, the session is frozen as soon as they are
// open, and tools/list and tools/call wait for that; a store, profile or
// setting that cannot be opened fails each of them with its error (the
// error's code and message where its kind is public) and the command with
// status 1 once stdin closes. tools/list offers the tools the session can run, each
// an entry of the tool table (mcp_tools.go) with its available predicate
// and its annotations: need_context always (read-only, idempotent, closed
// world), with a closed inputSchema (the session's routes as an enum) and,
// on 2025-06-18, the outputSchema of NeedResult; verify_change with a
// worker backend and not --cache-only; prepare_change when the frozen
// profile also lets patch workers write. A tool not listed is an unknown
// tool. Invalid arguments are -32602 before anything is resolved;
// content[0].text is the context, and structuredContent the NeedResult
// (2025-06-18 only).
//
// # Session digests
//
// Every session, whatever its transport, records with its row
// (session_digests, in the same transaction) what it speaks and what its
// workers are sent (transport.go, prompt_profile.go): the content id of
// its transport's contract (name, negotiated protocol, and the need
// request's schema for its routes; for MCP every tool's input and output
// schema), of the @@need marker grammar for a marker transport (the
// hook, needle exec: markerGrammarRevision and the readings of sample
// messages), and the revision and digest of the prompt profile: each
// worker kind's prompt set (evidence, patch, review, verify: developer
// instructions, turn prompts rendered for a fixed sample request, output
// schemas, the thread settings) digested as sent. The digest is of what
// is sent and never an input to it, so invocation identities, and the
// frozen transcripts the replay tier finds by them, do not move with it;
// a test holds the instructions and schemas to those the real codex
// recorded, and each revision (of the prompt profile and the grammar) to
// one digest (testdata/revisions.golden): a change must bump it.
// ResumeSession compares what a session froze (definition, routes,
// transport, the digests, main model) with what the resuming process runs
// under; a difference is named by SessionChanges and opens every reply
// of the session ("Needle note: since this session started, … changed").
// A session started before the digests were recorded has none: not known,
// and not a change.
//
// # Codex: the Stop hook and needle exec
//
// A main model running in Codex asks by writing a marker. Two transports
// hand its messages to Engine.Reply (engine_reply.go), which decides the
// answer for both: the Stop hook (hook.go, needle hook codex), which codex
// 0.171.0 runs when a turn stops and whose {"decision":"block","reason":R}
// makes codex continue the same turn with R as the model's next input, and
// needle exec (exec.go), which runs the main model as an App Server thread
// itself and delivers R as the input of a new turn (new-turn, the default)
// or steered into the running turn (continue-working; a new turn when the
// turn is not steerable). Both use the session "codex:<thread id>", so a
// Codex session driven partly by each shares one ledger, rebuilt from the
// store by every process (the hook runs once per stop).
//
// Reply answers nothing when the message has no marker (markerLines);
// names the problem, in at most 1 KiB, when there are several or the one
// does not parse or compile; answers nothing for a need already answered in
// the same user turn (the model has it); otherwise resolves the need as
// need_context does in the session — the same ledger, limits (3 needs, 3
// workers, hard cap 8) and workers — and replies with its FrontierView or
// typed bypass, in at most maxReplyBytes. A user turn (a Codex turn for the
// hook, whose continuations keep its turn id; the whole run for needle
// exec) gets at most replyLimit replies, the need limit plus one; a bypass
// because the session's need limit is reached, and the last reply the
// limit allows, say that they are the last. So a model that asks for ever
// is answered a bounded number of times, and then its turn ends: codex
// itself puts no bound on a blocking Stop hook. Every reply is recorded in
// replies before it is returned.
//
// The hook never exits 2 (codex would feed stderr to the model), exits 1
// on a failure (codex lets the turn end), reads the workers' settings only
// for a stop with a marker, and keeps its own deadline below the timeout
// it is installed with (codex kills only the hook process). The deadline
// runs from the start, reading the event on stdin included (an event not
// read by then fails the hook); at the deadline the worker's turn is
// interrupted and its process group killed, and the reply is the typed
// bypass. needle hook install merges the hook
// into codex's hooks file (product/internal/codexhook; a hooks file or
// config that is not a regular file is refused without blocking on it)
// and records its trust, without which codex exec skips it silently. needle exec turns
// hooks off for its thread and marks its App Server's environment
// (execSessionEnv), so an installed hook stands down there. A resolution
// still running when needle exec's turn ends is delivered by a new turn;
// only an interrupt cancels it (worker turn interrupted, process group
// killed, cleanup recorded) and the running turn.
//
// # Supervised changes
//
// PrepareChange (prepare_change) takes a task, 1-8 acceptance criteria, 1-16
// exact or subtree path scopes, optional artifact and claim ids (each must
// be certified evidence fresh for the current source: it becomes the
// workers' certified context) and optional bounded constraints, and starts
// a change lifecycle (below) under the session's role profile: there is
// one change path. The lifecycle's certified test plans are the
// focused_tests artifacts the request cites, or else the certified
// focused_tests evidence fresh for the current source whose tests sit
// beside a scoped file; none is invalid input. The kernel runs it until
// the first patch is made. The patch worker runs in a disposable checkout
// with a workspace-write sandbox confined to it (no network, no /tmp,
// approvals never asked and any request declined by policy). Needle then
// compares the checkout with its base outside the sandbox and builds the
// patch itself: every changed path must lie in a scope, be a regular file
// holding UTF-8 text and not be git metadata, within the file and byte
// limits, or the whole patch is rejected (fail closed). The patch is a
// list of operations (add, modify, delete with before/after content
// digests), content-addressed as patch_id; the blobs and the worker's raw
// report are stored, never returned. The worker's report of acceptance
// coverage is kept as a claim. A prepare_change that stops before its
// patch cancels its lifecycle: the caller never learnt its id.
//
// VerifyChange (verify_change, {"change_id"} only) runs the change's
// lifecycle on: Needle runs the certified tests in the codex sandbox on
// the patched checkout, a read-only reviewer and the distinct verifier
// judge it (the verifier gets the task, the criteria, the touched paths,
// the certified context and the tests' outcomes, never the patch worker's
// output), and a first repairable verdict consumes the change's one
// repair round (implement, test, review, verify again; a repair that
// changes nothing is rejected). It stops awaiting approval or at the
// lifecycle's end, and answers the newest verdict with the tests run on
// the patch in force; a repeated verify_change returns the recorded
// verdict. There is no apply: a verified change is approved and applied as
// every lifecycle is. A change an earlier Needle prepared without a
// lifecycle is only shown.
// Patches and verifications are immutable rows and the projection only
// moves forward (triggers refuse anything else). Scope paths and the paths
// a worker creates obey one repository-path rule (product/internal/
// safetext): valid UTF-8 without control, format (bidi, zero-width) or
// separator characters or backslashes, and no component that is git
// metadata on any file system, as git itself checks (.git in any case,
// with HFS+'s ignorable code points, NTFS's trailing dots and spaces and
// :streams, 8.3 names GIT~N). Scopes are compared in NFC. Change text
// (task, criteria, notes) obeys the one text rule: no control, format or
// separator character but newline and tab.
//
// # The change lifecycle
//
// An opt-in, depth-one state machine (package product/lifecycle, pure)
// takes a change through explore -> implement -> test -> review -> verify
// -> apply; lifecycle.Step(state, event) returns the next state and the
// effects, or a typed refusal (machine.go gives it the product's errors). A lifecycle freezes its change id, source snapshot, five
// role settings, sorted certified test plans, cumulative budget and
// concurrency one. Each role's frozen reference carries two digests: its
// settings with the role's name (Digest) and without it (Worker: sandbox,
// model, effort and the prompt set the role is briefed with, with that
// set's digest). The verifier must be a distinct worker: its Worker may
// be neither the reviewer's nor the implementer's (the names alone would
// tell any two roles apart). checkProfile refuses such a profile at
// needle profile create, StartLifecycle again (a profile another writer
// stored), and the machine refuses such a freeze; the built-in profile's
// verifier differs from its reviewer in its prompt set. The kernel (kernel.go) is the only transition
// authority: it replays the journal, runs the one pending invocation's
// adapter (adapter*.go: Codex workers; for test, Needle's own sandboxed go
// test), checks and persists the artifact (lifecycle_artifacts), then
// commits the transition by compare-and-swap on the state digest, writing
// the change rows it describes (changes, patches, verifications; the one
// repair reservation) in the same transaction. Every read replays the
// append-only change_events journal and checks the projection
// (change_lifecycles) and every payload digest: a lifecycle that does not
// check is a kindIntegrity error for every read and command (show,
// events, run, approve, apply, cancel), and a listing (needle change
// list, GET /api/v1/lifecycles, the UI) shows it as status corrupt with
// its ids and what does not check, beside the others. Invocation ids are
// content ids of (lifecycle, phase, attempt): an artifact persisted before
// a crash is committed by the next run without invoking anything. Before
// a run invokes anything, RunLifecycle checks what the phases
// ahead need (preflightRun): a running lifecycle on an engine without a
// worker, or before its test phase without the sandbox's binaries, is
// refused (kindUnavailable; needle change run exits 2) with nothing
// journaled, charged or recorded, rather than failed for good. needle
// doctor (doctor.go) checks those parts, and the rest Needle depends on,
// without running a command that needs them.
// Cancelling (CancelLifecycle: needle change cancel, the API and the UI)
// commits cancel_requested and reaches the work in flight
// (lifecycle_cancel.go): a runner in the same process is told through its
// store's register, one in another process sees the state digest move
// while its adapter runs (it polls every 200 ms); either cancels the
// adapter, whose worker's turn is interrupted and process group killed, or
// whose test run is killed, its checkout removed and its stop recorded,
// and only then lets go of the lifecycle's lease. CancelLifecycle waits
// for that lease, so it returns once the cleanup is done; the runner
// returns a kindConflict saying the lifecycle was cancelled.
// Approval binds the patch, verification and awaiting-approval state
// digests; apply (apply.go) refuses drift (a kindConflict, exit 3, HTTP
// 409) and writes nothing, journals intent, files and done, and a crashed
// apply is finished or undone at the next open. Each file keeps its
// permission bits (only its executable bits follow the patch, where the
// patch changes them), a new file gets the mode the patch says (0755
// executable, else 0644), and a restore puts back the mode a file had.
// Apply is idempotent: an applied change (a lifecycle's or one without)
// answers the first apply's outcome, read from the apply journal with the
// time it finished, on every later apply (CLI and API alike), and nothing
// is written again.
//
// Drift is what the proof depended on (drift.go): the tests and the
// verdict ran on the frozen snapshot with the patch laid on it, so apply
// refuses, naming every path, when a file the patch touches is not its
// base, when a file the verification's test runs compiled changed or is
// gone (the test phase records them from testrun.Result.Packages, with
// their modules' go.mod, go.sum and go.work, each with its digest in the
// snapshot: TestDependencies, bound by content id to the test evidence
// the verification cites), or when a new file appeared in the directory
// of a package they compiled (go would compile it, or embed it). Other
// changes — HEAD moved with the same content, files the proof did not
// depend on — are allowed and reported as the apply's notes. Test
// evidence recorded before Needle recorded what its runs compiled names
// nothing: then the whole snapshot must be unchanged. A change without a
// lifecycle ran no tests: its proof is the files its patch touches.
//
// Content addresses are checked on every read of a record that is about
// to be acted on (integrity.go): a patch's blobs (each file's new
// content) must hash to the after digests of its operations and those to
// its patch id, and a lifecycle artifact's id must be the one its event
// produced (its event's digest is checked as it is decoded, a
// verification's kept verdict must be the one it judged). Apply, diff,
// every phase that reads the patch, verify_change and the served details
// (needle change show, GET /api/v1/lifecycles/{id}) read through these
// checks; a record that fails one is a kindIntegrity error naming it
// (exit 5, HTTP 500 with kind "integrity" and the message), nothing is
// written or served from it, and the lifecycle goes no further.
//
// Data directories are made absolute where they enter (every command
// through cli.path, Open, OpenStore, startRuntime): checkouts, the test
// cache and sockets derived from a relative --data-dir would otherwise
// depend on the working directory of whatever uses them (a test runner
// refuses a relative cache). TestsConfig is resolved the same way: a
// relative cache lies in the data directory, a codex named without a
// path is looked up on PATH. Wherever Needle cannot run a test (no codex,
// a sandbox that fails its self-test, no Go toolchain) it says so and
// why: the undecided cause of a proposal (the CLI, the MCP result) and
// the detail of a lifecycle's test plan.
//
// # Resident runtime
//
// startRuntime (needle serve) owns one data directory. It takes the
// profile lock (product/internal/runlock: a flock on DATA_DIR/serve.lock
// with a holder record; a second runtime refuses naming the first, and a
// crashed holder's record is taken over), opens the one Store every
// command then shares, and serves two listeners. The IPC socket
// DATA_DIR/needle.sock (product/internal/ipc: 0600, same uid only) runs
// the resident commands of the command table (need resolve, evidence
// propose, mcp serve, change, profile, config, db check): a client dials it
// before opening a store and, when a runtime answers, its arguments,
// working directory and PATH travel over a framed upgrade and the same
// cli.dispatch runs them in the runtime over its store (runtime_exec.go);
// with no runtime (or a stale socket) the command opens the store itself.
// An MCP session is such a command reading its stdin for its life, so
// each keeps its own engine and ledger. The loopback HTTP server
// (product/internal/httpguard: 127.0.0.1 or ::1 only, bearer token or a
// session cookie from a one-time login URL, Host and Origin checks)
// serves the embedded UI (product/web) and the /api/v1 routes
// (runtime_api*.go), which project stored rows into the explicit DTOs of
// package web; the socket serves the same routes. It listens where it
// listened the first time on the data directory (DATA_DIR/serve.addr;
// a taken port means a free one for that start, said on stderr), so a
// tab's URL outlives a restart; sessions do not (they live in memory),
// so the UI, whose stream is refused, probes /api/v1/status and shows
// its login page, and a refused login link is an HTML page naming
// needle ui --open. A lifecycle's detail carries the diff Needle computes
// from the stored patch, each criterion's text with its verdict, and the
// reviewer's and verifier's words as labelled model text; the UI
// approves in two steps, and its Reject is a cancel whose note says so. What clients hold open
// is bounded (runtimeConfig): defaultMaxConns (64) HTTP and
// defaultMaxIPCConns (256) IPC connections, past which a connection is
// answered 503 and closed (httpguard.LimitListener); 32 live event
// streams (one more: 503); 10 s to send a request's headers; 2 minutes
// idle for an authenticated connection, none for an unauthenticated one,
// which is closed after its answer. The lifecycle routes run
// the engine methods of needle change (reads replay the journal;
// approvals and applies follow the same rules) on an engine of the
// lifecycle's repository over the runtime's store. Events
// (product/internal/sse, with Last-Event-ID resume) are read back from
// committed rows (runtime_events.go): a commit wakes the tail, a timer
// catches other processes' commits, and nothing is published before it is
// durable. Store caches (cache.go) keep decoded immutable rows by content
// id; they never decide what answers a need or whether it is fresh.
// Shutdown ends input to MCP sessions and the event streams, drains, and
// releases the lock.
//
// # Store
//
// SQLite (modernc.org/sqlite, no cgo) in DATA_DIR/needle.db is the source of
// truth. OpenStore sets and reads back journal_mode=WAL, foreign_keys=1 and
// busy_timeout, and guards application_id ("NEDL"): a database of another
// application is refused and left unchanged. Migrations are embedded from
// migrations/NNNN_name.sql and applied in order, each under BEGIN IMMEDIATE
// with PRAGMA user_version bumped and its BLAKE3 digest recorded in
// schema_migrations in the same transaction. At every open the digest of
// every applied migration is compared with the binary's text: a mismatch,
// or a database newer than the binary, refuses to open. Migrations are
// additive and shipped text never changes. The store's file, WAL and
// shared-memory file are 0600 whatever the data directory's mode: a new
// database file is created 0600 before SQLite opens it (SQLite gives the
// WAL and shared-memory file the database file's mode), and an existing
// store's looser files are narrowed at open; the runtime's token, lock and
// socket are 0600 too. An open holds an exclusive lock
// (DATA_DIR/needle.db.open-lock, product/internal/filelock) from the guard
// through the WAL switch to the last migration, so processes opening a new
// data directory at once take turns, and the migration history is read in
// one snapshot. A failure the data directory's file system explains (full,
// read-only, not writable; product/internal/fsinfo) is told as that.
//
// # Durability
//
// Certifications (validation attempts, artifacts, artifact and need
// certificates, their dependencies and claims) and needs are committed,
// and the WAL fsync'd, before any answer that uses them is given. The
// accounting of an answer (its ledger step, its resolution record and its
// economic observation) and stat-cache entries are written after it, off
// the request path: the accountant (accounting.go), on a thread of lower
// CPU priority (product/internal/threadprio), lets what is queued gather
// for accountLinger (2 ms) and commits it in one transaction, on a
// connection of its own at synchronous NORMAL (store_pragma.go): in WAL
// mode its commits do not wait for an fsync (the WAL is synced at each
// checkpoint and by the next durable commit), so a power loss may lose
// its last commits, never make the file inconsistent. Every other write
// commits at FULL. An MCP session's row and what it froze are
// the accounting of initialize, and a session a need starts through the
// API is the accounting of its first answer: queued too, and written
// before the accounting of the session's answers (a change, which refers
// to its session, waits for the row; a resumed session is written at once). Over MCP the accounting of an
// answer is queued only once the transport wrote the answer in full
// (jsonrpc.OnAnswered); through the API it is queued when NeedContext
// returns. A worker's answer is recorded before it is given, like the run.
// So a crash may lose the accounting of the answers given in its last
// moments (at most maxAccountQueue of them, given in the last
// accountLinger and the commit after it; on a power loss, also those of
// the accountant's commits since the last fsync) and unwritten stat-cache
// entries (a rehash later), never a certification, and never records an
// answer that was not given; ordinals of answers not recorded are gaps in
// the session's steps. Close writes everything queued.
//
// # Invariants
//
//   - Compile and resolve are pure: compile*.go and resolve*.go import no
//     database, network or subprocess package (a test checks the imports).
//   - Invalid input changes nothing and is reported before anything is
//     stored.
//   - Same meaning, same id, on any machine; the task wording is not meaning.
//   - Stale, rejected, ambiguous, contradicted or unvalidated evidence is
//     never returned; only certificates whose every dependency is unchanged
//     (or was re-proven by replay) back a context.
//   - Validators are code. A model's proposal grants nothing until they pass.
//   - SQL lives only in store_*.go (a test checks it); every content-id
//     tag is in identity.go (a test checks that too).
//
// # Files
//
// Each concept has one file, named by the noun the seeds use for it, and the
// same noun names it in every layer (need.go, store_need.go,
// main_need.go). Tests mirror their sources (engine_need_test.go tests
// engine_need.go).
//
//	need.go              routes, subject kinds, capabilities, facets; NeedRequest
//	compile*.go          the compiler (pure): needIR and need_id; JSON and @@need markers
//	definition.go        the semantic definition and its id
//	bounds.go            bounds on untrusted need input
//	identity.go          every content-id tag; mustID, mustJSON; random ids
//	errors.go            Error{Op, Kind, Err}; the Kind → exit status and JSON-RPC code table
//	text.go              bounded untrusted text; strict decoding
//	proposal.go          Proposal (typed evidence as proposed), its decoder and schema
//	validate.go          the trusted validators: dispatch, reading cited files, type-checking the snapshot
//	validate_go.go       Go locations by go/types: symbols, natural spans, flag and key definitions
//	validate_flow.go     runtime_flow: a step holds the subject; what the source says of each link
//	validate_flow_run.go runtime_flow by execution: scenarios as models write them, probes, the run
//	validate_option_run.go  options no definition names (a parser comparing names, constant keys), proven by a run
//	validate_tests.go    focused_tests: reach by running the test (static reach only advises); Needle's commands
//	validate_python.go   Python declarations by Python's own parser, in the sandbox: names, natural spans, tests
//	validate_python_names.go   Python names beyond the declaring file: package re-exports, inherited methods
//	validate_python_option.go  Python flags and environment variables by meaning: argparse, click, typer, os.environ
//	validate_python_tests.go   Python focused tests, run with pytest under coverage.py in the sandbox
//	validate_python_flow.go    Python flows, by running their scenario with every call into the steps recorded
//	validate_lexical.go  lexical evidence for other languages: definition-shaped lines
//	runner.go            TestsConfig; the type checker, the sandboxed test runner and its cache
//	run_ahead.go         a proposal's first test run, started beside its type check
//	evidence.go          Evidence, certificates, dependencies, claims
//	freshness.go         freshness through the stat cache; proof replay
//	refresh.go           Refresh: re-prove changed evidence ahead of the needs
//	refresher.go         mcp serve's background refresher: the change watcher and its loop
//	resolve.go           the resolver (pure): ResolutionKind, decisions
//	resolve_plan.go      plans (planOp) and their economic selection
//	ledger.go            the session ledger: relations and limits
//	result.go            NeedResult, resultStatus, reuseUnit, Failure
//	frontier.go          the FrontierView text
//	engine.go            Engine, Config, sessions, the FIFO turn
//	engine_open.go       Open and Close: the one place that wires the store, workers and adapters
//	engine_need.go       NeedContext: the need pipeline's effects; the memo of candidates
//	accounting.go        the accountant: answers' accounting, written after the answer
//	stats.go             needle stats: hits, tokens saved, stale evidence withheld, proofs by kind
//	gc.go                needle gc: what processes that are gone left in a data directory
//	reply.go             Reply: what Needle answers to a marker in a model's message
//	engine_reply.go      Engine.Reply: per-turn limits, resolution, the record
//	hook.go              the Codex Stop hook: answering a stop, installing the hook
//	exec.go              needle exec: the main model's App Server thread and the delivery of replies
//	worker.go            workerPort and its request and result types
//	worker_codex.go      the Codex App Server worker (sessions, checkouts, homes)
//	worker_continue.go   worker continuation: a session's kept evidence worker, continued by a new turn
//	worker_change.go     the change workers' prompts, answer schemas and judging
//	change.go            supervised changes: the request, statuses, verdicts, results
//	change_json.go       decoding and checking a change request
//	patch.go             a patch's files, operations and id; Needle's checks of it; one patch attempt
//	engine_change.go     the patch builder; the certified evidence a change cites
//	change_mcp.go        MCP's PrepareChange and VerifyChange, run on the lifecycle kernel
//	machine.go           the lifecycle machine's refusals and decode failures as the product's errors
//	lifecycle.go         starting a lifecycle, test plans, the safe views (DTOs)
//	kernel.go            the execution kernel: replay, invoke, persist, CAS commit
//	lifecycle_cancel.go  cancelling reaches the adapter in flight; waiting for its cleanup
//	adapter.go           the adapters' bounded requests and results
//	adapter_codex.go     the Codex App Server adapters: explore, implement, review, verify
//	adapter_testrun.go   the test adapter: Needle runs the frozen test plans, sandboxed
//	invocation.go        invocation records around every adapter: no worker runs twice under one id
//	apply.go             approval and apply: the binding an approval names, the apply's entry
//	apply_journal.go     the journaled all-or-nothing apply and its rollback
//	apply_recover.go     an interrupted apply finished, undone or abandoned; recovery at open
//	apply_write.go       the locks an apply holds; the work tree's files read and written
//	diff.go              the unified diff of a change's patch
//	integrity.go         content addresses checked on read: patch blobs, lifecycle artifacts
//	drift.go             the drift rule: what a lifecycle's proof depended on, checked at apply
//	engine_lifecycle.go  StartLifecycle, RunLifecycle, Lifecycles, Lifecycle, LifecycleEvents
//	profile.go           role profiles; the distinct verifier
//	prompt_profile.go    the prompt profile: each worker kind's prompts and schemas, versioned and digested
//	transport.go         the marker grammar's and each transport's digests; what a session records of them
//	mcp.go               the MCP server: session, initialize, tools/list and tools/call
//	mcp_tools.go         the MCP tool table and its typed handlers
//	mcp_schema.go        the tools' input and output schemas
//	store.go             the SQLite store: open, check, transactions, queryAll
//	store_pragma.go      PRAGMAs read back; the application_id guard; the accountant's connection
//	store_*.go           the store's methods, one file per noun (need, session,
//	                     evidence, resolution, worker, stat, stats, profile, change;
//	                     and the lifecycle's by domain: lifecycle, artifact,
//	                     apply, invocation)
//	cache.go             hot caches of decoded immutable records
//	runtime.go           the resident runtime (needle serve): lock, store, servers, shutdown
//	runtime_exec.go      commands run in the runtime for IPC clients, and the client side
//	runtime_api.go       the /api/v1 handlers: explicit DTOs of product/web
//	runtime_api_lifecycle.go  the lifecycle routes: reads, approval and apply
//	runtime_api_review.go  what a person judges before approving: the diff, criteria, model text
//	runtime_reads.go     the runtime's reads for its handlers; the handlers never reach the store
//	runtime_events.go    the event stream: committed rows published as server-sent events
//	main.go              the needle command: dispatch, help, version
//	datadir.go           the data directory's door for the commands without a repository
//	doctor.go            needle doctor's checks: tools, data directory, sandbox, runtime, the hosts' MCP and hook files
//	main_*.go            its command families: need, evidence, profile (and
//	                     config), mcp, db, change, serve (and ui), stats, gc, doctor,
//	                     completion (and the hidden __complete its scripts run)
//
// Outside the package: product/lifecycle (the change lifecycle machine,
// pure: phases, states, events and their journal form, effects, digests,
// with data-driven transcripts in its testdata), product/codextest (a
// replay App Server and a fake model for tests and the harness, like
// net/http/httptest), product/testenv (the tests' shared set-up: the module
// root, the pinned codex, the caches, a store's rows), product/progress (a
// long command's progress on stderr, for bench too: a live line on a
// terminal, plain lines elsewhere), product/complete (shell completion
// from a command table's help text, for bench too), product/migrations (the embedded
// SQL), product/web (the embedded UI and the /api/v1 DTOs), and the leaves under product/internal: appserver (the App Server client),
// checkout (disposable checkouts), codexhook (codex's lifecycle-hook
// protocol, hooks files and hook trust), contentid, contract (the contract
// tier's scenarios), enum (closed sets of string values), failpoint (crash
// injection for the tests), fakemodel (a loopback Responses API for codex),
// fakeanthropic (a loopback Messages API for Claude Code), filelock (a
// cancellable file lock), fsinfo (why a file system refuses writes),
// httpguard (the loopback server's authentication and request rules), ipc
// (the unix socket and framed streams), jsonrpc (the JSON-RPC server),
// mdblock (CommonMark block structure), migrate, ndjson (line I/O),
// lazyregexp (a regular expression compiled on first use, not in every
// process's init), procdir (process identity and process-owned
// directories), replay, runlock (the profile lock), safetext (the rules for
// untrusted text and repository paths), schema (JSON Schema builder),
// snapshot (repository snapshots and digests), sse (the event broker),
// testrun (one Go test run in a sandbox, with coverage), threadprio (a
// background goroutine's thread at lower CPU priority), transcript and
// typecheck (go/types answers: declarations, definitions, reads, resolved
// calls).
package product
