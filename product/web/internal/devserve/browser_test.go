package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/needle-dev/needle/product/web"
)

// shotDir receives screenshots of the main views (reports/ui at the
// repository root; ignored by git).
const shotDir = "../../../../reports/ui"

// chromium finds Debian's chromium (NEEDLE_CHROMIUM overrides). Missing
// in CI is a failure; elsewhere the browser tests are skipped with a note.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NEEDLE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install chromium); .ci/run installs it")
	}
	t.Skip("chromium is not installed; the browser tests run in CI")
	return ""
}

// browser starts a fresh headless chromium and returns a tab context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first run starts the browser, which lives as long as the context
	// of that run: not a per-step timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel3 := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel3)
	return ctx
}

// TestBrowser drives the UI in chromium: log in through the one-time URL,
// watch a resolution arrive through SSE without a reload, read evidence and
// accounting, open a lifecycle with its events, approve and apply it, and
// see the 409 of a drifted work tree.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	s := startSeeded(t)
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			if buf, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
				os.MkdirAll(shotDir, 0o755)
				os.WriteFile(filepath.Join(shotDir, "failure.png"), buf, 0o644)
			}
			t.Fatalf("%s: %v (screen in %s/failure.png)", step, err, shotDir)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100) /* 100: PNG */)
		if err == nil {
			err = os.MkdirAll(shotDir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(shotDir, name+".png"), buf, 0o644)
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	click := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

	do("log in", chromedp.Navigate(s.guard.LoginURL()), visible(`tr[data-resolution="12"]`), visible(`#live.live-live`))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != s.url+"/" {
		t.Fatalf("after login the browser is at %q (%v), want %s/ (the code must leave the address bar)", loc, err, s.url)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload = 42`)); err != nil {
		t.Fatal(err)
	}
	shot("feed")

	s.api.AddResolution(web.ResolutionSummary{NeedID: digest("new"), Route: "tests.relevant", Subject: web.Subject{Kind: "symbol", Name: "LineSplitter"}, Kind: "exact_hit", Hit: true, TokensSaved: 7777, LatencyMS: 2.5})
	do("live resolution", visible(`tr[data-resolution="13"]`))
	if row := text(`tr[data-resolution="13"]`); !strings.Contains(row, "7,777") || !strings.Contains(row, "exact_hit") {
		t.Fatalf("new row %q lacks its kind or tokens saved", row)
	}
	if marker, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload`)); err != nil || marker != 42 {
		t.Fatalf("the page reloaded to show the new resolution (%d, %v)", marker, err)
	}
	do("totals follow", chromedp.WaitVisible(`//dd[@data-total="Resolutions"][text()="13"]`))

	do("evidence", click(`tr[data-resolution="12"] a`), visible(`[data-freshness="fresh"]`))
	shot("evidence")
	do("accounting", click(`a[href="#/accounting"]`), visible(`#acct-h`), visible(`svg[aria-label^="Hit rate"]`))
	shot("accounting")
	const ok, drifted = "chg_0123456789abcdef01234567", "chg_89abcdef0123456789abcdef"
	do("lifecycles", click(`a[href="#/lifecycles"]`), visible(`tr[data-change="`+ok+`"]`))
	shot("lifecycles")
	do("lifecycle detail", click(`a[href="#/lifecycles/`+ok+`"]`), visible(`.timeline li[data-seq="11"]`))
	shot("lifecycle")
	for kind, want := range map[string]string{"patch": digest("patch", ok), "verification": digest("verification", ok)} {
		if got := strings.TrimSpace(text(`.approve [data-digest="` + kind + `"]`)); got != want {
			t.Fatalf("the approval shows %s digest %q, want %s", kind, got, want)
		}
	}
	do("approve and apply", click(`.approve button`), visible(`#applied`), visible(`.timeline li[data-seq="13"]`))
	shot("applied")
	s.api.mu.Lock()
	status := s.api.lifecycles[ok].summary.Status
	s.api.mu.Unlock()
	if status != "applied" {
		t.Fatalf("after approve and apply the lifecycle is %q", status)
	}

	s.api.Drift(drifted, "internal/search/lines.go")
	do("drift conflict, by keyboard",
		chromedp.Navigate(s.url+"/#/lifecycles/"+drifted),
		visible(`.approve button`),
		chromedp.Focus(chromedp.CSS(`.approve button`)),
		chromedp.KeyEvent("\r"),
		visible(`#conflict`),
	)
	shot("conflict")
	reason, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`[data-conflict-reason]`), "data-conflict-reason"))
	if err != nil || reason.Value != "work_tree_drift" {
		t.Fatalf("conflict reason %+v (%v), want work_tree_drift", reason, err)
	}
	if note := text(`#conflict`); !strings.Contains(note, "internal/search/lines.go") || !strings.Contains(note, "409") {
		t.Fatalf("conflict note %q does not name the drifted path and 409", note)
	}
	s.api.mu.Lock()
	status = s.api.lifecycles[drifted].summary.Status
	s.api.mu.Unlock()
	if status != "awaiting_approval" {
		t.Fatalf("a drifted apply changed the lifecycle to %q", status)
	}
	t.Logf("screenshots in %s", filepath.Clean(shotDir))
}

// TestBrowser_LoggedOut: a browser without the session sees the login
// note, not data.
func TestBrowser_LoggedOut(t *testing.T) {
	ctx := browser(t)
	s := startSeeded(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`.login`))); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.login`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "not logged in") {
		t.Fatalf("logged-out page says %q", text)
	}
}
