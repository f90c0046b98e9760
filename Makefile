# Needle — build, test and check. `make test` is what CI runs (.ci/run).
GO ?= go
BIN := bin

.PHONY: all build test bench-smoke check lint fmt vet staticcheck demo fuzz clean

all: build

## build: build needle and needlebench into ./bin
build:
	$(GO) build -o $(BIN)/ ./cmd/needle ./cmd/needlebench

## test: every test, including the testscript golden scenarios (go test ./testscripts)
test:
	$(GO) test ./...

## bench-smoke: run every benchmark once so none rots (figures: go test -bench)
bench-smoke:
	$(GO) test ./... -run '^$$' -bench . -benchtime 1x

## lint: gofmt, go vet and staticcheck (pinned by the go.mod tool directive)
lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

## check: lint, then the tests, then the race detector on the product core
check: lint test
	$(GO) test -race ./product/...

## demo: the main job until the benchmark harness lands — compile the bundled
## example need (the MCP seed's need_context) as JSON and as a @@need marker
demo: build
	$(BIN)/needle need compile fixtures/need-context.json
	$(BIN)/needle need compile --marker fixtures/need-context.marker

## fuzz: run each fuzz target of untrusted-input parsers for FUZZTIME (default 5m)
FUZZTIME ?= 5m
fuzz:
	$(GO) test ./product -run '^$$' -fuzz '^FuzzCompileJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzParseMarker$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product -run '^$$' -fuzz '^FuzzDecodeProposal$$' -fuzztime $(FUZZTIME)
	$(GO) test ./product/internal/goevidence -run '^$$' -fuzz '^FuzzDeclarations$$' -fuzztime $(FUZZTIME)

clean:
	rm -rf $(BIN)
