package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteReport_HTML: the report gets an HTML page naming every chart
// file with its SVG inlined, the stale figures of Needle and of the naive
// cache and the wall time of each phase in its headline, and a stale chart
// next to the others; the JSON and the Markdown carry the phases too.
func TestWriteReport_HTML(t *testing.T) {
	dir := t.TempDir()
	r := Report{Corpus: "tiny", Needs: 10, Sessions: 4, Hits: 6, StaleReturned: 0, NaiveHits: 8, NaiveStaleReturned: 173,
		WorkerTokens: 1000, NaiveWorkerTokens: 990, BaselineWorkerTokens: 2500,
		ResolutionKinds: map[string]int{"exact_hit": 6, "miss": 4},
		Phases:          []Phase{{"sandbox check", 1.25}, {"play", 30}, {"validation", 18.75}}}
	files, err := writeReport(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "tiny.html")
	if !contains(files, page) {
		t.Fatalf("writeReport wrote %v, want %s among them", files, page)
	}
	stale := filepath.Join(dir, "tiny-stale.svg")
	svg, err := os.ReadFile(stale)
	if err != nil {
		t.Fatalf("stale chart: %v", err)
	}
	if !strings.Contains(string(svg), "173 of 8 hits") {
		t.Errorf("stale chart does not label the naive cache's figure")
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{"tiny-resolutions.svg", "tiny-tokens.svg", "tiny-stale.svg",
		"<td>stale answers returned by Needle</td><td>0</td>",
		"<td>stale answers a naive exact-text cache would return</td><td>173 of its 8 hits</td>",
		"<td>wall time by phase, s</td><td>sandbox check 1.2, play 30.0, validation 18.8 (all 50.0)</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if n := strings.Count(html, "<svg"); n != 3 {
		t.Errorf("HTML inlines %d SVGs, want 3", n)
	}
	if strings.Contains(html, "<?xml") {
		t.Errorf("HTML carries an XML declaration")
	}
	md, err := os.ReadFile(filepath.Join(dir, "tiny.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Wall time by phase", "| sandbox check | 1.2 | 2.5% |", "| play | 30.0 | 60.0% |", "| validation | 18.8 | 37.5% |", "| all | 50.0 | |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	var back struct {
		Phases []Phase `json:"phases"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "tiny.json"))
	if err == nil {
		err = json.Unmarshal(data, &back)
	}
	if err != nil || !slices.Equal(back.Phases, r.Phases) {
		t.Errorf("JSON phases %v (%v), want %v", back.Phases, err, r.Phases)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
