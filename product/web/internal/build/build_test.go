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
	css := got[assetName(got, ".css")]
	if len(css) == 0 || bytes.Contains(css, []byte("@import")) || bytes.Contains(css, []byte("url(http")) {
		t.Error("the stylesheet is missing or loads from another origin")
	}
	// The page names exactly the hashed assets that were built.
	for _, ext := range []string{".js", ".css"} {
		name := assetName(got, ext)
		if !regexp.MustCompile(`^assets/app-[A-Z0-9]{8,}\`+ext+`$`).MatchString(name) || !bytes.Contains(index, []byte(`"/`+name+`"`)) {
			t.Errorf("index.html does not name the hashed asset %q", name)
		}
	}
}
