package main

import (
	"bytes"
	"regexp"
	"testing"
)

// TestDistFresh rebuilds the UI from the sources (installing the locked npm
// packages when missing, type-checking with tsc) and fails when the
// committed dist/ differs: run `go generate ./product/web`.
func TestDistFresh(t *testing.T) {
	const dir = "../.."
	if err := install(dir); err != nil {
		t.Fatal(err)
	}
	if err := typecheck(dir); err != nil {
		t.Fatal(err)
	}
	got, err := bundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := readDist(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(got, onDisk); len(d) > 0 {
		t.Fatalf("dist/ is not what the sources build (%v); run go generate ./product/web", d)
	}
	// The page loads only its own assets: no inline script or style, no
	// other origin.
	index := got["index.html"]
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).Match(index) || bytes.Contains(index, []byte("<style")) || bytes.Contains(index, []byte(" style=")) {
		t.Error("index.html has inline script or style")
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).Match(index) {
		t.Error("index.html loads from another origin")
	}
	if bytes.Contains(got["assets/app.css"], []byte("@import")) || bytes.Contains(got["assets/app.css"], []byte("url(http")) {
		t.Error("app.css loads from another origin")
	}
}
