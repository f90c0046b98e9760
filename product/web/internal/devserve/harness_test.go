package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// shortDir is a data directory short enough for the IPC socket's path.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ndl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startSeeded starts the harness on a fresh data dir with the seed data.
func startSeeded(t testing.TB) *server {
	t.Helper()
	s, err := start(context.Background(), options{dataDir: shortDir(t), addr: "127.0.0.1:0", log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	s.api.seed(time.Now())
	t.Cleanup(func() { s.shutdown(context.Background()) })
	return s
}

// get fetches path with the bearer token and returns status and body.
func (s *server) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// post sends a JSON body with the given headers.
func (s *server) post(t testing.TB, path, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(body))
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}
