# Needle — build, test and check. `make test` is what CI runs (.ci/run).
GO ?= go
BIN := bin

# The pinned real Codex CLI for the contract tier, installed from npm into an
# ignored project-local directory. CODEX_BIN is the one variable the contract
# tests locate the binary through.
CODEX_VERSION := 0.171.0
CODEX_PREFIX := .cache/codex-$(CODEX_VERSION)
CODEX_BIN ?= $(CURDIR)/$(CODEX_PREFIX)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
CODEX_SCHEMA := $(CURDIR)/.cache/codex-schema-$(CODEX_VERSION)

# The pinned real Claude Code, the second MCP host of the contract tier
# (product/internal/contract runs it headless as the host of needle mcp
# serve). npm puts the native binary in the platform package; the wrapper's
# postinstall only copies it over bin/claude.exe, so it is not run (nor is
# node: the wrapper's engines field asks for node 22, the binary needs none).
CLAUDE_VERSION := 2.1.332
CLAUDE_PREFIX := .cache/claude-code-$(CLAUDE_VERSION)
CLAUDE_BIN ?= $(CURDIR)/$(CLAUDE_PREFIX)/node_modules/@anthropic-ai/claude-code-linux-x64/claude

.PHONY: all build test test-unit test-contract codex claude frozen-worker frozen-continue frozen-changes frozen-hook frozen-exec frozen-lifecycle frozen-corpus corpus crash soak bench bench-smoke check lint fmt vet staticcheck dupl demo fuzz clean

all: build

## build: build needle and needlebench into ./bin
build:
	$(GO) build -o $(BIN)/ ./cmd/needle ./cmd/needlebench

## test: every test: the unit and replay tiers with the testscript golden
## scenarios (go test ./...), then the contract tier against the real codex
test: test-unit test-contract
	@echo "The ten slowest tests of both tiers (go test -json timings):"
	@cat $(TESTLOG)-unit.json $(TESTLOG)-contract*.json | $(GOTESTSUM) tool slowest --num 10

# gotestsum runs go test -json, prints what go test prints without it
# (standard-quiet), and keeps the JSON for the slowest-tests list; pinned,
# and run with go run, so it is not a dependency of the module.
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.13.0
TESTLOG := .cache/tests

# The unit tier needs the pinned codex too: product/internal/testrun runs
# tests inside its sandbox. The timeout only guards against a hang: the
# product package alone takes about 16 minutes on 2 cores, and more than 30
# beside a second `make test` (issue 24's runs under load).
test-unit: codex
	mkdir -p .cache
	NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GOTESTSUM) --format standard-quiet --jsonfile $(TESTLOG)-unit.json -- -timeout 60m ./...

## codex: install the pinned @openai/codex from npm (if absent) and check its version
codex: $(CODEX_PREFIX)/.installed
$(CODEX_PREFIX)/.installed:
	mkdir -p $(CODEX_PREFIX)
	npm install --no-audit --no-fund --no-save --prefix $(CODEX_PREFIX) @openai/codex@$(CODEX_VERSION)
	$(CODEX_BIN) --version | grep -qx 'codex-cli $(CODEX_VERSION)'
	touch $@

## claude: install the pinned @anthropic-ai/claude-code from npm (if absent) and check its version
claude: $(CLAUDE_PREFIX)/.installed
$(CLAUDE_PREFIX)/.installed:
	mkdir -p $(CLAUDE_PREFIX)
	npm install --no-audit --no-fund --no-save --ignore-scripts --prefix $(CLAUDE_PREFIX) @anthropic-ai/claude-code@$(CLAUDE_VERSION)
	$(CLAUDE_BIN) --version | grep -qx '$(CLAUDE_VERSION) (Claude Code)'
	touch $@

## test-contract: the contract tier: regenerate the App Server JSON Schema with
## the real binary and run the adapter against it and a loopback fake model;
## run the real codex and Claude Code as MCP hosts of needle mcp serve
test-contract: codex claude
	rm -rf $(CODEX_SCHEMA)
	$(CODEX_BIN) app-server generate-json-schema --out $(CODEX_SCHEMA)
	NEEDLE_CODEX_BIN=$(CODEX_BIN) NEEDLE_CODEX_SCHEMA=$(CODEX_SCHEMA) NEEDLE_CLAUDE_BIN=$(CLAUDE_BIN) \
		$(GOTESTSUM) --format standard-quiet --jsonfile $(TESTLOG)-contract.json -- -tags contract -count=1 ./product/internal/contract/... ./product/internal/codexhook && \
	NEEDLE_CODEX_BIN=$(CODEX_BIN) NEEDLE_CODEX_SCHEMA=$(CODEX_SCHEMA) \
		$(GOTESTSUM) --format standard-quiet --jsonfile $(TESTLOG)-contract-product.json -- -tags contract -count=1 -run '^TestContract' ./product

## frozen-worker: re-record the evidence-worker transcripts of fixtures/worker
## with the real codex and the fake model (the update switch for frozen/worker)
frozen-worker: build codex
	rm -rf frozen/worker/grepx
	for n in newsearcher linesplitter splitcrlf; do \
		profile=; if [ -f fixtures/worker/$$n.profile.json ]; then profile="--profile fixtures/worker/$$n.profile.json"; fi; \
		$(BIN)/needlebench record --codex $(CODEX_BIN) --repository fixtures/repos/grepx.txtar \
			--need fixtures/worker/$$n.need.json --answer fixtures/worker/$$n.answer.json $$profile \
			--out frozen/worker/grepx || exit 1; \
	done

## frozen-changes: re-record the MCP change transcripts of fixtures/changes
## (patch worker, reviewer, verifier, the repair; the certified tests run for
## real in the codex sandbox) with the real codex and the fake model (the
## update switch for frozen/changes)
frozen-changes: build codex
	rm -rf frozen/changes
	for n in verified undeclared repair repair_twice repair_noop; do \
		$(BIN)/needlebench record-change --codex $(CODEX_BIN) --repository fixtures/repos/grepx.txtar \
			--scenario fixtures/changes/$$n.json --out frozen/changes/$$n --tests-cache $(CURDIR)/.cache/testrun-lifecycle || exit 1; \
	done

## frozen-continue: re-record the worker continuation scenarios (a session's
## extension need continuing its worker's thread, and the fresh threads it is
## compared with) with the real codex and the fake model (frozen/continue)
frozen-continue: codex
	NEEDLE_UPDATE=1 NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GO) test -tags contract -count=1 -run '^TestContract_WorkerContinue$$' ./product

## frozen-hook: re-record the evidence-worker session the Codex hook's
## testscripts and contract tier replay (frozen/hook/worker)
frozen-hook: build codex
	rm -rf frozen/hook/worker
	$(BIN)/needlebench record --codex $(CODEX_BIN) --repository fixtures/repos/greet.txtar \
		--need fixtures/hook/greet.need.json --answer fixtures/hook/greet.answer.json --out frozen/hook/worker

## frozen-exec: re-record the needle exec scenarios with the real codex as
## the main thread and the fake model as the main model: each main thread
## into frozen/exec/NAME/main.jsonl, its real workers into
## frozen/exec/NAME/workers/ (the replay tier plays them)
frozen-exec: codex
	NEEDLE_UPDATE=1 NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GO) test -tags contract -count=1 -run '^TestContractExec$$' ./product

## crash: the crash-injection harness at full strength: at least 1,000
## SIGKILLs of child `needle change run|apply` processes at every boundary
## of the lifecycle kernel and the apply (make test runs 40)
CRASH_KILLS ?= 1000
crash: codex
	NEEDLE_CODEX_BIN=$(CODEX_BIN) NEEDLE_CRASH_KILLS=$(CRASH_KILLS) $(GO) test ./product -run '^TestLifecycleCrashes$$' -count=1 -v -timeout 90m

## soak: the load and fault run at full length: needle serve under 16
## concurrent MCP sessions (hits, and misses through the replay App
## Server), 4 event-stream clients and CLI change lifecycles, killed with
## SIGKILL every SOAK_KILL_EVERY and started again; then no request lost
## without an error, needle db check, no accounting row twice, the peak RSS
## (make test runs a 20 s version with one kill)
SOAK ?= 10m
SOAK_KILL_EVERY ?= 2m
soak: codex
	NEEDLE_CODEX_BIN=$(CODEX_BIN) NEEDLE_SOAK=$(SOAK) NEEDLE_SOAK_KILL_EVERY=$(SOAK_KILL_EVERY) \
		$(GO) test ./product -run '^TestSoak$$' -count=1 -v -timeout 60m

## frozen-lifecycle: re-record the change-lifecycle transcripts of
## fixtures/lifecycle (explore, implement, review and verify workers; the
## tests run for real in the codex sandbox) with the real codex and the fake
## model (the update switch for frozen/lifecycle)
frozen-lifecycle: build codex
	rm -rf frozen/lifecycle
	for n in verified repair inconclusive; do \
		$(BIN)/needlebench record-lifecycle --codex $(CODEX_BIN) --repository fixtures/repos/grepx.txtar \
			--scenario fixtures/lifecycle/$$n.json --out frozen/lifecycle/$$n --tests-cache $(CURDIR)/.cache/testrun-lifecycle || exit 1; \
	done

## bench: the main job — play the bundled default corpus (five real Go
## modules, two versions each) through the product with the replay App
## Server, the validators running proposed tests in the pinned codex's
## sandbox; prints a summary and writes reports/default.{json,md} and charts
bench: build codex
	$(BIN)/needlebench run --codex $(CODEX_BIN) corpus/default

## corpus: regenerate the bundled corpora (corpus/default, corpus/tiny) from
## their pinned modules: sessions, scripted answers in the natural dialect,
## the per-test coverage and the intervention truth (every test and program
## run in the pinned codex's sandbox); then re-record their transcripts
## with make frozen-corpus
CORPUS_DEFAULT := github.com/pkg/errors@v0.8.1,v0.9.1 github.com/google/uuid@v1.5.0,v1.6.0 \
	github.com/google/go-cmp@v0.5.9,v0.6.0 github.com/rogpeppe/go-internal@v1.12.0,v1.13.1 github.com/spf13/cobra@v1.8.1,v1.9.1 \
	github.com/urfave/cli/v2@v2.25.7,v2.27.7 github.com/mattn/go-isatty@v0.0.19,v0.0.20
corpus: build codex
	$(BIN)/needlebench corpus generate --codex $(CODEX_BIN) --name default --seed 1 $(CORPUS_DEFAULT)
	$(BIN)/needlebench corpus generate --codex $(CODEX_BIN) --name tiny --seed 2 --subjects 4 github.com/pkg/errors@v0.8.1,v0.9.1

## frozen-corpus: re-record the corpora's worker transcripts (frozen/default,
## frozen/tiny) with the real codex and the scripted fake model
frozen-corpus: build codex
	$(BIN)/needlebench record --codex $(CODEX_BIN) corpus/default
	$(BIN)/needlebench record --codex $(CODEX_BIN) corpus/tiny

## bench-smoke: run every benchmark once so none rots (figures: go test -bench)
bench-smoke: codex
	NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GO) test -timeout 30m ./... -run '^$$' -bench . -benchtime 1x

## lint: gofmt, go vet, staticcheck and dupl (both pinned by the go.mod tool directive)
lint: fmt vet staticcheck dupl

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

# dupl: no Go clone of DUPL_TOKENS syntax tokens or more (about eight
# lines) anywhere in the tree, tests included: a copy fails lint, and the
# code is shared instead (product/testenv for the tests' set-up).
DUPL_TOKENS = 75
dupl:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './.git/*' -not -path './bin/*' -not -path './tmp/*' \
		-not -path './product/web/node_modules/*' | $(GO) tool dupl -files -t $(DUPL_TOKENS) -plumbing) || exit 1; \
	if [ -n "$$out" ]; then echo "$$out"; echo "dupl: copies of $(DUPL_TOKENS) tokens or more: share the code"; exit 1; fi

## check: lint, then the tests, then the race detector on the product core
check: lint test
	$(GO) test -race ./product/...

## demo: Needle end to end without model credentials (needlebench demo): in
## a throwaway repository and data directory, the replay App Server playing
## the frozen real codex sessions answers a need with a worker (certified),
## the same need is a hit, the answer follows moved lines, a change
## lifecycle runs to awaiting approval; then needle serve prints its login
## URL and, in a terminal, runs until Ctrl-C. The sandboxed test's build
## cache is .cache/testrun-lifecycle (the lifecycle tests'): on a cold cache
## the first run spends a minute or two compiling the standard library;
## later runs take seconds. DEMO_FLAGS: e.g. --keep, --no-serve, --wait
DEMO_FLAGS ?=
demo: build codex
	$(BIN)/needlebench demo --codex $(CODEX_BIN) $(DEMO_FLAGS)

## fuzz: run each fuzz target of untrusted-input parsers for FUZZTIME (default 5m)
FUZZTIME ?= 5m
fuzz:
	$(GO) test ./product -run '^$$' -fuzz '^FuzzCompileJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzParseMarker$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeProposal$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeChangeRequest$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeLifecycleEvent$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeLifecycleState$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzStepLifecycle$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeReview$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeExecSpec$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/ipc -run '^$$' -fuzz '^FuzzReadFrame$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/httpguard -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/sse -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/sse -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/replay -run '^$$' -fuzz '^FuzzApplyHunks$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzMCPParams$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzMCPSession$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/jsonrpc -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/jsonrpc -run '^$$' -fuzz '^FuzzCancelParams$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/safetext -run '^$$' -fuzz '^FuzzCheckRepoPath$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/ndjson -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/contentid -run '^$$' -fuzz '^FuzzCanonicalize$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/typecheck -run '^$$' -fuzz '^FuzzParseSubject$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/typecheck -run '^$$' -fuzz '^FuzzParseOption$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/typecheck -run '^$$' -fuzz '^FuzzStructTag$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/typecheck -run '^$$' -fuzz '^FuzzLookup$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/typecheck -run '^$$' -fuzz '^FuzzBuildList$$' -fuzztime $(FUZZTIME)
	NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GO) test ./product/internal/testrun -run '^$$' -fuzz '^FuzzParseProfile$$' -fuzztime $(FUZZTIME)
	NEEDLE_CODEX_BIN=$(CODEX_BIN) $(GO) test ./product/internal/testrun -run '^$$' -fuzz '^FuzzEventLog$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/testrun/cacheprog -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/codexhook -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/codexhook -run '^$$' -fuzz '^FuzzInstall$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/codexhook -run '^$$' -fuzz '^FuzzTrust$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/codexhook -run '^$$' -fuzz '^FuzzWords$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/mdblock -run '^$$' -fuzz '^FuzzLines$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/mdblock -run '^$$' -fuzz '^FuzzLinesAny$$' -fuzztime $(FUZZTIME)

clean:
	rm -rf $(BIN)
