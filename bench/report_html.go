package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// staleChart draws the stale answers Needle returned against those a
// naive exact-text cache would have returned over the same needs: the
// token chart shows the two caches costing about the same, and this is
// what the naive one costs in correctness.
func staleChart(r Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: stale answers returned", r.Corpus)
	p.Y.Label.Text = "stale answers"
	b, err := plotter.NewBarChart(plotter.Values{float64(r.StaleReturned), float64(r.NaiveStaleReturned)}, vg.Points(40))
	if err != nil {
		return nil, err
	}
	b.Color = staleColor
	p.Add(b)
	p.NominalX(fmt.Sprintf("Needle (%d)", r.StaleReturned), fmt.Sprintf("naive exact-text cache (%d of %d hits)", r.NaiveStaleReturned, r.NaiveHits))
	p.X.Min, p.X.Max = -0.75, 1.75
	p.Y.Min = 0
	if r.StaleReturned == 0 && r.NaiveStaleReturned == 0 {
		p.Y.Max = 1 // an empty axis would have no range
	}
	return p, nil
}

// staleColor is the stale chart's bar colour.
var staleColor = color.RGBA{R: 0xaa, G: 0x22, B: 0x22, A: 0xff}

// htmlRow is one row of the HTML headline table.
type htmlRow struct{ Measure, Value string }

// htmlChart is one chart of the HTML page: its file name and its SVG.
type htmlChart struct {
	File string
	SVG  template.HTML
}

// reportPage is the HTML report's template: the headline table and every
// chart inlined, so the page is one file that opens anywhere.
var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>needlebench report: {{.Corpus}}</title>
<style>
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
figure { margin: 2em 0; }
</style>
</head>
<body>
<h1>needlebench report: corpus <code>{{.Corpus}}</code></h1>
<p>Every number except the latencies and wall times is deterministic: a second run gives the same figures.
The full explanation of each number is in <a href="{{.Markdown}}">{{.Markdown}}</a>.</p>
<h2>Headline</h2>
<table>
<tr><th>measure</th><th>value</th></tr>
{{range .Rows}}<tr><td>{{.Measure}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
<h2>Charts</h2>
{{range .Charts}}<figure>
{{.SVG}}
<figcaption><a href="{{.File}}">{{.File}}</a></figcaption>
</figure>
{{end}}</body>
</html>
`))

// writeHTML writes <base>.html: the headline table and the charts (the SVG
// files charts names, inlined).
func writeHTML(base string, r Report, charts []string) (string, error) {
	page := struct {
		Corpus, Markdown string
		Rows             []htmlRow
		Charts           []htmlChart
	}{Corpus: r.Corpus, Markdown: filepath.Base(base) + ".md", Rows: headlineRows(r)}
	for _, c := range charts {
		svg, err := os.ReadFile(c)
		if err != nil {
			return "", err
		}
		// The SVG is gonum/plot's output for this report, not input.
		page.Charts = append(page.Charts, htmlChart{File: filepath.Base(c), SVG: template.HTML(stripXMLDecl(svg))})
	}
	var b bytes.Buffer
	if err := reportPage.Execute(&b, page); err != nil {
		return "", err
	}
	file := base + ".html"
	return file, os.WriteFile(file, b.Bytes(), 0o644)
}

// stripXMLDecl drops an SVG file's XML declaration, which has no place
// inside an HTML document.
func stripXMLDecl(svg []byte) []byte {
	if bytes.HasPrefix(svg, []byte("<?xml")) {
		if i := bytes.Index(svg, []byte("?>")); i >= 0 {
			return bytes.TrimLeft(svg[i+2:], "\r\n")
		}
	}
	return svg
}

// headlineRows are the headline figures of the HTML page: the stale
// answers of Needle and of the naive cache first, then the tokens.
func headlineRows(r Report) []htmlRow {
	all := r.Validation["all"]
	rows := []htmlRow{
		{"needs played (sessions)", fmt.Sprintf("%d (%d)", r.Needs, r.Sessions)},
		{"hits (served from evidence, no worker)", fmt.Sprintf("%d (%s)", r.Hits, percentOf(r.Hits, r.Needs))},
		{"stale answers returned by Needle", fmt.Sprint(r.StaleReturned)},
		{"stale answers a naive exact-text cache would return", fmt.Sprintf("%d of its %d hits", r.NaiveStaleReturned, r.NaiveHits)},
		{"false answers the validators certified", fmt.Sprintf("%d of %d false", all.FalseCertified, all.FalseCertified+all.FalseRejected)},
		{"worker tokens: Needle / naive cache / no reuse", fmt.Sprintf("%d / %d / %d", r.WorkerTokens, r.NaiveWorkerTokens, r.BaselineWorkerTokens)},
		{"worker tokens saved against no reuse", fmt.Sprintf("%.1f%%", r.TokensSavedPct)},
		{"worker runs (failed)", fmt.Sprintf("%d (%d)", r.WorkerRuns, r.WorkerRunsFailed)},
		{"latency of hits, ms (p50 / p95 / p99)", fmt.Sprintf("%.1f / %.1f / %.1f", r.ValidationMs.P50, r.ValidationMs.P95, r.ValidationMs.P99)},
	}
	if len(r.Phases) > 0 {
		var ph []string
		for _, p := range r.Phases {
			ph = append(ph, fmt.Sprintf("%s %.1f", p.Name, p.Seconds))
		}
		rows = append(rows, htmlRow{"wall time by phase, s", fmt.Sprintf("%s (all %.1f)", strings.Join(ph, ", "), phaseTotal(r.Phases))})
	}
	return rows
}
