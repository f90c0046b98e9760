package product

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_ApprovalReview: the lifecycle page of a real `needle serve`
// shows what a person judges before approving — the diff Needle computed,
// with its added and removed lines marked; each criterion in the words it
// was started with and its verdict; the verifier's reasons and the
// review's findings labelled as model text; the tests with their times.
// Approval takes a review screen first, which Back leaves with nothing
// approved; Reject cancels the lifecycle with the reason in its journal,
// and nothing is written.
func TestBrowser_ApprovalReview(t *testing.T) {
	ctx := browserTab(t)
	p := page{t, ctx}
	data := shortDir(t)
	srv := startServe(t, data)
	onlyFrom(t, ctx, srv.url)
	repo := MustFixtureRepo(t, "grepx", true)
	lc := startLifecycle(t, repo, data)
	r := []string{"--repository", repo, "--data-dir", data, lc.id}
	p.do("the lifecycle page", chromedp.Navigate(srv.login), visible(`#live.live-live`),
		chromedp.Navigate(srv.url+"/#/lifecycles/"+lc.id), visible(`[data-diff-file="search.go"]`), visible(`#review-approval`))

	added, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-line="add"]')].map(r => r.querySelector(".diff-sign").getAttribute("aria-label") + " " + r.querySelector("pre").textContent)`))
	if err != nil || !slices.Contains(added, "added "+strings.TrimSuffix(splitComment, "\n")) {
		t.Errorf("the diff does not mark the patch's comment as added: %q (%v)", added, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-line="del"] .diff-sign[aria-label="removed"]').length`)); err != nil || n == 0 {
		t.Errorf("the diff marks no removed line (%d, %v)", n, err)
	}
	// The lines the page marks are those of needle change diff.
	var cliAdded []string
	for _, l := range strings.Split(needleRun(t, "", append([]string{"change", "diff"}, r...)...), "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			cliAdded = append(cliAdded, "added "+l[1:])
		}
	}
	if !slices.Equal(added, cliAdded) {
		t.Errorf("the page's added lines %q; needle change diff adds %q", added, cliAdded)
	}
	crit := p.text(`.acceptance li[data-criterion="1"]`)
	for _, want := range []string{"The comment of splitCRLF says it trims the carriage return of every line.", "met",
		"verifier's reason, model text (unverified)", "search.go line 28 says"} {
		if !strings.Contains(crit, want) {
			t.Errorf("criterion 1 lacks %q: %q", want, crit)
		}
	}
	if f := p.text(`.findings`); !strings.Contains(f, "reviewer's words, model text (unverified)") || !strings.Contains(f, "The comment states the trimming") {
		t.Errorf("the review's findings are not shown as the reviewer's words: %q", f)
	}
	if tt := p.text(`li[data-test]`); !strings.Contains(tt, "passed in ") {
		t.Errorf("the test's outcome lacks its time: %q", tt)
	}
	p.shot("approval-detail")
	audited := p.a11y("approval-detail")

	p.do("the review screen", click(`#review-approval`), visible(`#approval-review`), visible(`[data-review-file="search.go"]`))
	if got := strings.TrimSpace(p.text(`#approval-review [data-digest="patch"]`)); got != lc.digests.Patch {
		t.Fatalf("the review screen names patch %q; needle change show says %s", got, lc.digests.Patch)
	}
	p.shot("approval-review")
	audited += p.a11y("approval-review")
	p.do("back, nothing approved", click(`#approval-back`), visible(`#review-approval`))
	if show := needleRun(t, "", append([]string{"change", "show"}, r...)...); !strings.Contains(show, "needle change approve") {
		t.Fatalf("after Back the lifecycle no longer awaits approval:\n%s", show)
	}

	p.do("reject with a reason", click(`#reject`), visible(`#reject-reason`),
		chromedp.SendKeys(chromedp.CSS(`#reject-reason`), "the comment should name LF too"),
		click(`#confirm-reject`), visible(`.timeline li[data-kind="cancel_requested"]`))
	p.shot("rejected")
	if ev := p.text(`.timeline li[data-kind="cancel_requested"]`); !strings.Contains(ev, `rejected in the UI: the comment should name LF too`) {
		t.Errorf("the journal's cancel does not carry the reason: %q", ev)
	}
	if events := needleRun(t, "", append([]string{"change", "events"}, r...)...); !strings.Contains(events, `rejected in the UI: the comment should name LF too`) {
		t.Errorf("needle change events does not show the rejection's reason:\n%s", events)
	}
	if show := needleRun(t, "", append([]string{"change", "show"}, r...)...); !strings.Contains(show, "/cancelled") {
		t.Errorf("the rejected lifecycle is not cancelled:\n%s", show)
	}
	if st := MustRun(t, repo, "git", "status", "--porcelain"); st != "" {
		t.Errorf("rejecting wrote the work tree: %q", st)
	}
	t.Logf("screenshots in %s; %d accessibility nodes checked", filepath.Clean(uiShots), audited)
}

// TestBrowser_Restart: a tab open while `needle serve` restarts on the
// same data directory (and so the same port) does not sit reconnecting
// over stale data: its stream, refused by the new runtime, re-probes the
// status and shows the login page that says to run needle ui. A login
// link used twice shows a page saying so, not JSON.
func TestBrowser_Restart(t *testing.T) {
	ctx := browserTab(t)
	p := page{t, ctx}
	data := shortDir(t)
	srv := startServe(t, data)
	onlyFrom(t, ctx, srv.url)
	p.do("log in", chromedp.Navigate(srv.login), visible(`#live.live-live`))
	if code := srv.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("needle serve exited %d", code)
	}
	again := startServe(t, data)
	if again.url != srv.url {
		t.Fatalf("the restarted runtime listens on %s, not %s", again.url, srv.url)
	}
	p.do("the tab shows the login page", visible(`#login-why`))
	if text := p.text(`.login`); !strings.Contains(text, "session ended") || !strings.Contains(text, "needle ui --open --data-dir DIR") {
		t.Errorf("the login page says %q", text)
	}
	p.shot("login-after-restart")

	p.do("log in again", chromedp.Navigate(again.login), visible(`#live.live-live`))
	p.do("the used link again", chromedp.Navigate(again.login), visible(`#login-refused`))
	if text := p.text(`#login-refused`); !strings.Contains(text, "already used") || !strings.Contains(text, "needle ui --open") {
		t.Errorf("the page of a used login link says %q", text)
	}
	p.shot("login-refused")
}
