package product

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/needle-dev/needle/product/web"
)

// The browser tests drive the embedded UI of a real `needle serve` process
// in Debian's chromium (headless, through chromedp), while real needle
// commands change what it shows. They save screenshots of the main views
// in reports/ui/ (ignored by git).

// uiShots is where the screenshots go.
const uiShots = "../reports/ui"

// chromiumPath finds chromium (NEEDLE_CHROMIUM overrides). A missing
// chromium fails the test, never skips it: .ci/run installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NEEDLE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed (apt-get install chromium; .ci/run installs it): the browser tests need it")
	return ""
}

// browserTab starts a fresh headless chromium and returns a tab.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
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
	if err := chromedp.Do(ctx); err != nil { // starts the browser for the tab's life
		t.Fatalf("start chromium: %v", err)
	}
	// The hang guard is the test binary's own deadline (go test -timeout),
	// less a margin for the screenshot and the report: a fixed budget failed
	// on a loaded machine (beside three other suites the feed took 284 s).
	if d, ok := t.Deadline(); ok {
		var cancel3 context.CancelFunc
		ctx, cancel3 = context.WithDeadline(ctx, d.Add(-30*time.Second))
		t.Cleanup(cancel3)
	}
	return ctx
}

// onlyFrom fails the test, at its end, if the tab requested anything
// but the origins' and data: URLs: the UI must work without external
// network (no CDN, no fonts, no telemetry).
func onlyFrom(t *testing.T, ctx context.Context, origins ...string) {
	t.Helper()
	allowed := []string{"data:"}
	for _, o := range origins {
		allowed = append(allowed, o+"/")
	}
	var mu sync.Mutex
	var requests, offsite []string
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			defer mu.Unlock()
			requests = append(requests, e.Request.URL)
			for _, a := range allowed {
				if strings.HasPrefix(e.Request.URL, a) {
					return
				}
			}
			offsite = append(offsite, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(requests) == 0 {
			t.Error("the network log saw no request at all: it does not watch the tab")
		}
		if len(offsite) > 0 {
			t.Errorf("the UI requested %d URLs outside %q: %q", len(offsite), origins, offsite)
		}
	})
}

// page drives one tab: steps with a bound each, text reads, screenshots.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	// Bounded by the tab's context (the test's deadline), not by a time of
	// its own: a step is slow, not failed, on a loaded machine.
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.shot("failure")
		p.t.Fatalf("%s: %v (screen in %s/failure.png)", step, err, uiShots)
	}
}

func (p page) text(sel string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

func (p page) shot(name string) {
	p.t.Helper()
	buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err == nil {
		err = os.MkdirAll(uiShots, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(uiShots, name+".png"), buf, 0o644)
	}
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
}

// crossSite is a page of another site on loopback: once set, it posts
// body to target from a credentialed fetch, then from a form (text/plain,
// the closest to JSON a form can send), as a hostile page would.
type crossSite struct {
	*httptest.Server
	mu           sync.Mutex
	target, body string
}

func crossSitePage(t *testing.T) *crossSite {
	t.Helper()
	c := &crossSite{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		target, body := c.target, c.body
		c.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>another site</title>
<form id="f" method="POST" action="%s" enctype="text/plain"><input type="hidden" name="%s" value=""></form>
<script>
fetch(%s, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: %s})
	.finally(() => document.getElementById("f").submit());
</script>`, html.EscapeString(target), html.EscapeString(strings.TrimSuffix(body, "}")+`,"pad":"`), strconv.Quote(target), strconv.Quote(body))
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *crossSite) set(target, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target, c.body = target, body
}

// a11y checks the view shown against the browser's own accessibility
// tree (an oracle independent of the UI's code): every link, button,
// image, heading, form control and landmark region has a name. Then it
// walks the page with the Tab key and checks that every visible link,
// button and control is reached. It returns how many nodes it checked.
func (p page) a11y(view string) int {
	p.t.Helper()
	ctx := p.ctx
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		p.t.Fatalf("%s: accessibility tree: %v", view, err)
	}
	named := map[string]bool{"link": true, "button": true, "image": true, "img": true, "heading": true, "textbox": true,
		"checkbox": true, "combobox": true, "radio": true, "searchbox": true, "navigation": true, "region": true, "figure": true}
	str := func(v *accessibility.Value) string {
		var s string
		if v != nil {
			json.Unmarshal(v.Value, &s)
		}
		return s
	}
	checked, roles := 0, map[string]int{}
	for _, n := range tree.Nodes {
		if n.Ignored {
			continue
		}
		role := str(n.Role)
		if !named[role] {
			continue
		}
		checked++
		roles[role]++
		if strings.TrimSpace(str(n.Name)) == "" {
			p.t.Errorf("%s: a %s without an accessible name (DOM node %d)", view, role, n.BackendDOMNodeID)
		}
	}
	if roles["link"] == 0 || roles["heading"] == 0 {
		p.t.Fatalf("%s: the accessibility tree has no link or heading (%v): the audit saw no page", view, roles)
	}
	// The keyboard: Tab from the top of the page reaches every control.
	const controls = `[...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])')]
		.filter(e => !e.disabled && e.getClientRects().length > 0)`
	want, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);
		document.querySelectorAll("[data-kbd]").forEach(e => e.removeAttribute("data-kbd")); `+controls+`.length`))
	if err != nil || want == 0 {
		p.t.Fatalf("%s: %d controls (%v)", view, want, err)
	}
	for range want + 2 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			p.t.Fatalf("%s: Tab: %v", view, err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(document.activeElement && document.activeElement.setAttribute("data-kbd", "1") === undefined)`)); err != nil {
			p.t.Fatal(err)
		}
	}
	missed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](controls+`.filter(e => !e.hasAttribute("data-kbd")).map(e => e.outerHTML.slice(0, 120))`))
	if err != nil {
		p.t.Fatal(err)
	}
	if len(missed) > 0 {
		p.t.Errorf("%s: Tab never reaches %d of %d controls: %q", view, len(missed), want, missed)
	}
	p.t.Logf("%s: %d named nodes %v; Tab reached all %d controls", view, checked, roles, want)
	return checked
}

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

// needleRun runs a needle command (this test binary) and fails on a
// non-zero exit.
func needleRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := needleCommand(t, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("needle %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBrowser_Feed logs in through the printed one-time URL, watches a
// resolution made by a real `needle need resolve` arrive through the
// event stream without a reload, and reads the evidence and accounting
// views.
func TestBrowser_Feed(t *testing.T) {
	ctx := browserTab(t)
	p := page{t, ctx}
	data, repo := shortDir(t), MustFixtureRepo(t, "grepx", false)
	// The focused test below is certified by running it, in codex's sandbox.
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.codex", MustSandbox(t))
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.cache", MustTestsConfig(t).CacheDir)
	srv := startServe(t, data)
	r := []string{"--repository", repo, "--data-dir", data}
	frozen, err := filepath.Abs("../frozen/worker/grepx")
	if err != nil {
		t.Fatal(err)
	}
	// A worker answers the first need (a miss that spends tokens); its
	// evidence then answers the same need again (a hit that saves them).
	needleRun(t, string(MustReadFile(t, "../fixtures/worker/newsearcher.need.json")),
		append([]string{"need", "resolve", "--codex", strings.Join(MustReplayCommand(t, frozen), " ")}, append(r, "-")...)...)
	for _, ev := range []string{locCRLF, flowCRLF, testsCRLF} {
		needleRun(t, ev, append([]string{"evidence", "propose"}, append(r, "-")...)...)
	}
	for _, need := range []string{needTraceCRLF, needLocateNewSearcher, `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Nowhere"}}`} {
		needleRun(t, need, append([]string{"need", "resolve", "--cache-only"}, append(r, "-")...)...)
	}

	onlyFrom(t, ctx, srv.url)
	p.do("log in", chromedp.Navigate(srv.login), visible(`tr[data-resolution="4"]`), visible(`#live.live-live`))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != srv.url+"/" {
		t.Fatalf("after login the browser is at %q (%v), want %s/ (the code must leave the address bar)", loc, err, srv.url)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload = 42`)); err != nil {
		t.Fatal(err)
	}
	p.shot("feed")

	needleRun(t, needTestsCRLF, append([]string{"need", "resolve", "--cache-only"}, append(r, "-")...)...)
	p.do("the new resolution arrives live", visible(`tr[data-resolution="5"]`))
	if row := p.text(`tr[data-resolution="5"]`); !strings.Contains(row, "coverage_hit") || !strings.Contains(row, "--crlf") {
		t.Fatalf("the new row %q lacks its kind or subject", row)
	}
	if marker, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload`)); err != nil || marker != 42 {
		t.Fatalf("the page reloaded to show the new resolution (%d, %v)", marker, err)
	}
	p.do("the totals follow", chromedp.WaitVisible(`//dd[@data-total="Resolutions"][text()="5"]`))
	if row := p.text(`tr[data-resolution="3"]`); !strings.Contains(row, "exact_hit") || strings.Contains(row, "\t0\t0\t") {
		t.Errorf("the hit that reused the worker's evidence: %q", row)
	}
	p.shot("feed-live")
	audited := p.a11y("feed")

	p.do("evidence", click(`tr[data-resolution="2"] a:last-of-type`), visible(`[data-freshness="fresh"]`))
	view := p.text("main")
	if !strings.Contains(view, "flags.go") || !strings.Contains(view, "the --crlf flag is parsed") {
		t.Errorf("the evidence view lacks the flow's steps:\n%s", view)
	}
	// A step's description is the proposer's words: shown labelled, as the
	// CLI and MCP label it.
	if !strings.Contains(view, "worker's description (unverified) the --crlf flag is parsed") {
		t.Errorf("a flow step's description is not labelled as the worker's, unverified:\n%s", view)
	}
	p.shot("evidence")
	audited += p.a11y("evidence")
	// Edit the cited code: the same view, reloaded, says stale.
	flags := filepath.Join(repo, "flags.go")
	MustWriteFile(t, flags, strings.Replace(string(MustReadFile(t, flags)), "treat CRLF", "handle CRLF", 1))
	p.do("stale evidence", chromedp.Reload(), visible(`[data-freshness="stale"]`))
	p.shot("evidence-stale")

	// By keyboard: the nav link, then Enter.
	p.do("accounting", chromedp.Focus(chromedp.CSS(`a[href="#/accounting"]`)), chromedp.KeyEvent("\r"), visible(`#acct-h`),
		visible(`svg[aria-label^="Hit rate"]`), visible(`svg[aria-label^="Tokens saved"]`))
	p.shot("accounting")
	audited += p.a11y("accounting")
	t.Logf("screenshots in %s; %d accessibility nodes checked", filepath.Clean(uiShots), audited)
}

// TestBrowser_LoggedOut: a browser without the session sees the login
// note, not data; the API refuses it.
func TestBrowser_LoggedOut(t *testing.T) {
	ctx := browserTab(t)
	srv := startServe(t, shortDir(t))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/"), visible(`.login`)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.login`)))
	if err != nil || !strings.Contains(text, "not logged in") {
		t.Fatalf("logged-out page says %q (%v)", text, err)
	}
}

// TestBrowser_Lifecycle follows change lifecycles made by the real needle
// change commands in the UI of a real `needle serve`: the list fills in
// live as a lifecycle starts and runs; its detail shows the journal and
// exactly the digests `needle change show` prints; approving and applying
// writes the patch; and with the work tree drifted the apply is a 409 that
// names the path and writes nothing.
func TestBrowser_Lifecycle(t *testing.T) {
	ctx := browserTab(t)
	p := page{t, ctx}
	data := shortDir(t)
	srv := startServe(t, data)
	evil := crossSitePage(t)
	onlyFrom(t, ctx, srv.url, evil.URL)
	p.do("log in", chromedp.Navigate(srv.login), visible(`#live.live-live`), click(`a[href="#/lifecycles"]`), visible(`#lc-h`))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload = 7`)); err != nil {
		t.Fatal(err)
	}

	repo := MustFixtureRepo(t, "grepx", true)
	lc := startLifecycle(t, repo, data)
	row := `tr[data-lifecycle="` + lc.id + `"]`
	p.do("the lifecycle appears live, awaiting approval", visible(row+` [data-status="awaiting_approval"]`))
	if marker, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload`)); err != nil || marker != 7 {
		t.Fatalf("the page reloaded to show the lifecycle (%d, %v)", marker, err)
	}
	p.shot("lifecycles")
	audited := p.a11y("lifecycles")

	// The journal as needle change events prints it: one line per event.
	events := len(regexp.MustCompile(`(?m)^ *\d+  `).FindAllString(needleRun(t, "", "change", "events", "--repository", repo, "--data-dir", data, lc.id), -1))
	p.do("the detail with its journal", click(row+` a`), visible(`.timeline li[data-seq="`+strconv.Itoa(events)+`"]`), visible(`#review-approval`))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".timeline li").length`)); err != nil || n != events || events < 6 {
		t.Fatalf("the timeline shows %d events (%v); needle change events prints %d", n, err, events)
	}
	p.shot("lifecycle")
	audited += p.a11y("lifecycle")

	// Approving is two steps: the review screen names the digests, then
	// the confirmation approves and applies.
	p.do("review the approval", click(`#review-approval`), visible(`#approval-review`))
	for kind, want := range map[string]string{"patch": lc.digests.Patch, "verification": lc.digests.Verification, "lifecycle": lc.digests.Lifecycle} {
		if got := strings.TrimSpace(p.text(`#approval-review [data-digest="` + kind + `"]`)); got != want {
			t.Fatalf("the UI asks to approve %s digest %q; needle change show says %s", kind, got, want)
		}
	}
	search := filepath.Join(repo, "search.go")
	p.do("approve and apply", click(`#confirm-approve`), visible(`#applied`), visible(`.timeline li[data-kind="apply_completed"]`))
	if !strings.Contains(string(MustReadFile(t, search)), splitComment) {
		t.Fatal("the apply did not write the patch")
	}
	if st := MustRun(t, repo, "git", "status", "--porcelain"); st != " M search.go\n" {
		t.Errorf("git status after the apply: %q", st)
	}
	p.shot("applied")

	// A second repository of the same data directory; its work tree drifts
	// after the lifecycle ran.
	repo2 := MustFixtureRepo(t, "grepx", true)
	lc2 := startLifecycle(t, repo2, data)

	// Another site in the same browser, which holds the session cookie,
	// posts the approval of lc2's very digests: a form, and a fetch with
	// credentials. The runtime refuses both, and nothing is approved.
	approvals := srv.url + "/api/v1/lifecycles/" + lc2.id + "/approvals"
	body, err := json.Marshal(web.ApprovalRequest{Digests: lc2.digests})
	if err != nil {
		t.Fatal(err)
	}
	evil.set(approvals, string(body))
	before := needleRun(t, "", "change", "show", "--repository", repo2, "--data-dir", data, lc2.id)
	// What the browser saw of each post: the answer's status, or why it
	// withheld the answer from the page.
	outcomes := make(chan string, 8)
	posts := map[network.RequestID]bool{} // touched by the listener only
	if err := chromedp.Listen(ctx, func(ev any) {
		var out string
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request.URL == approvals {
				posts[e.RequestID] = true
			}
		case *network.EventResponseReceived:
			if posts[e.RequestID] {
				out = fmt.Sprintf("%s %d", e.Type, e.Response.Status)
			}
		case *network.EventLoadingFailed:
			if posts[e.RequestID] {
				out = fmt.Sprintf("%s blocked %s", e.Type, e.BlockedReason)
			}
		}
		if out != "" {
			select {
			case outcomes <- out:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	p.do("a cross-site form post and fetch", chromedp.Navigate(evil.URL))
	var seen []string
	for range 2 {
		select {
		case out := <-outcomes:
			seen = append(seen, out)
		case <-p.ctx.Done():
			p.shot("failure")
			t.Fatalf("the cross-site page did not post both approvals before the test's deadline (saw %q):\n%s", seen, srv.stderr.String())
		}
	}
	// The fetch's answer is withheld from the other site (the runtime's
	// Cross-Origin-Resource-Policy); the form lands on the refusal.
	slices.Sort(seen)
	if want := []string{"Document 403", "Fetch blocked corp-not-same-origin"}; !slices.Equal(seen, want) {
		t.Errorf("the browser saw the cross-site posts answered %q, want %q", seen, want)
	}
	refusal := "refused POST /api/v1/lifecycles/" + lc2.id + "/approvals: 403 forbidden_origin"
	if !srv.stderr.waitCount(refusal, 2, time.Until(deadlineOf(p.ctx))) {
		t.Errorf("the runtime did not log 2 refusals %q:\n%s", refusal, srv.stderr.String())
	}
	if show := needleRun(t, "", "change", "show", "--repository", repo2, "--data-dir", data, lc2.id); show != before {
		t.Fatalf("the cross-site posts changed the lifecycle:\n%s\nbefore them:\n%s", show, before)
	}

	edited := "package main\n\n// edited by hand while the change awaited approval\n"
	MustWriteFile(t, filepath.Join(repo2, "search.go"), edited)
	p.do("drift conflict, by keyboard",
		chromedp.Navigate(srv.url+"/#/lifecycles/"+lc2.id),
		visible(`#review-approval`),
		chromedp.Focus(chromedp.CSS(`#review-approval`)),
		chromedp.KeyEvent("\r"),
		visible(`#confirm-approve`),
		chromedp.Focus(chromedp.CSS(`#confirm-approve`)),
		chromedp.KeyEvent("\r"),
		visible(`#conflict`),
	)
	p.shot("conflict")
	audited += p.a11y("conflict")
	reason, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`[data-conflict-reason]`), "data-conflict-reason"))
	if err != nil || reason.Value != "work_tree_drift" {
		t.Fatalf("conflict reason %+v (%v), want work_tree_drift", reason, err)
	}
	if note := p.text(`#conflict`); !strings.Contains(note, "search.go") || !strings.Contains(note, "409") {
		t.Fatalf("the conflict note %q does not name the drifted path and 409", note)
	}
	if got := string(MustReadFile(t, filepath.Join(repo2, "search.go"))); got != edited {
		t.Fatalf("a refused apply wrote the work tree:\n%s", got)
	}
	if show := needleRun(t, "", "change", "show", "--repository", repo2, "--data-dir", data, lc2.id); !strings.Contains(show, "apply/approved") {
		t.Errorf("after the refused apply the lifecycle is not approved and waiting:\n%s", show)
	}
	t.Logf("screenshots in %s; %d accessibility nodes checked", filepath.Clean(uiShots), audited)
}

// TestBrowser_CorruptLifecycle: the list of a real `needle serve` shows a
// lifecycle that does not check as corrupt, with its id, beside the others;
// its detail shows the integrity error.
func TestBrowser_CorruptLifecycle(t *testing.T) {
	c := newCorruptFixture(t)
	ctx := browserTab(t)
	p := page{t, ctx}
	srv := startServe(t, c.te.data)
	onlyFrom(t, ctx, srv.url)
	bad, good := `tr[data-lifecycle="`+c.bad.ID+`"]`, `tr[data-lifecycle="`+c.good.ID+`"]`
	p.do("the list shows both, one corrupt", chromedp.Navigate(srv.login), visible(`#live.live-live`), click(`a[href="#/lifecycles"]`),
		visible(bad+` [data-status="corrupt"]`), visible(bad+` [data-corrupt="`+c.bad.ID+`"]`), visible(good+` [data-status="running"]`))
	if note := p.text(bad + ` [data-corrupt]`); !strings.Contains(note, "corrupt") {
		t.Errorf("the corrupt row says %q", note)
	}
	p.shot("corrupt")
	p.a11y("corrupt")
	p.do("its detail is the integrity error", click(bad+` a`), visible(`.error[role="alert"]`))
	if note := p.text(`.error[role="alert"]`); !strings.Contains(note, "integrity") || !strings.Contains(note, c.bad.ID) {
		t.Errorf("the detail of the corrupt lifecycle says %q", note)
	}
}

// deadlineOf is ctx's deadline, or an hour from now when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}
