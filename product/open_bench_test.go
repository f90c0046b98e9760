//go:build linux

package product

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// The benchmarks of this file isolate the cold start of needle mcp serve
// (issue 13 cause 6), from the spawn to the initialize answer, on a store
// and a git repository that already exist. Open ran `git rev-parse` twice
// (snapshot.Open, then again on the resolved root), opened a second
// database connection to guard the application id before the store's own,
// and stored the definition and the default profile in write
// transactions; initialize created the session and froze it in two. Now
// Open runs one rev-parse while the store opens, on one connection, reads
// what is already stored, and initialize writes the session once.

// mustColdStore is a git fixture and a data directory whose store exists.
func mustColdStore(tb testing.TB) (repo, data string) {
	tb.Helper()
	te := MustEngine(tb, MustFixtureRepo(tb, "grepx", true))
	if err := te.store.ensureDefaultProfile(context.Background()); err != nil {
		tb.Fatal(err)
	}
	te.Close()
	return te.repo, te.data
}

// BenchmarkOpen opens and closes the engine as needle mcp serve does.
func BenchmarkOpen(b *testing.B) {
	repo, data := mustColdStore(b)
	ctx := context.Background()
	for b.Loop() {
		e, err := Open(ctx, Config{DataDir: data, Repository: repo, CacheOnly: true, Transport: "mcp", MainModel: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenStore opens and closes the store alone (the application-id
// guard's connection, the store's connection, PRAGMA checks, migration
// digests).
func BenchmarkOpenStore(b *testing.B) {
	_, data := mustColdStore(b)
	ctx := context.Background()
	for b.Loop() {
		st, err := OpenStore(ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardApplicationID is the application-id guard's three reads.
// It had a connection of its own, opened before the store's; it now runs
// on the store's first connection (BenchmarkOpenStore).
func BenchmarkGuardApplicationID(b *testing.B) {
	_, data := mustColdStore(b)
	ctx := context.Background()
	path := filepath.Join(data, storeFileName)
	db, err := sql.Open("sqlite", storeDSN(path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for b.Loop() {
		if err := guardApplicationID(ctx, conn, path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotOpen is one `git rev-parse --show-toplevel`, which
// Open runs twice.
func BenchmarkSnapshotOpen(b *testing.B) {
	repo, _ := mustColdStore(b)
	ctx := context.Background()
	for b.Loop() {
		r, err := snapshot.Open(ctx, repo, nil)
		if err != nil || !r.IsGit() {
			b.Fatalf("snapshot.Open: %v (git %v)", err, r != nil && r.IsGit())
		}
	}
}

// BenchmarkMCPInitialize serves one MCP connection in process up to the
// initialize answer and its end: the session is created and frozen.
func BenchmarkMCPInitialize(b *testing.B) {
	repo, data := mustColdStore(b)
	ctx := context.Background()
	e, err := Open(ctx, Config{DataDir: data, Repository: repo, CacheOnly: true, Transport: "mcp", MainModel: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	rev, err := e.Profile(ctx, DefaultProfileID)
	if err != nil {
		b.Fatal(err)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	for b.Loop() {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- ServeMCP(ctx, MCPConfig{Engine: e, Repository: repo, MainModel: "bench", Profile: rev, CacheOnly: true, Log: io.Discard}, inR, outW)
			outW.Close()
		}()
		if _, err := io.WriteString(inW, initialize); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(outR).ReadString('\n')
		if err != nil || !strings.Contains(line, `"protocolVersion":"2025-06-18"`) {
			b.Fatalf("initialize answer %q: %v", line, err)
		}
		inW.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
