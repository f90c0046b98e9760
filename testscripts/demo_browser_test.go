package testscripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// demoShot is where the demo's screenshot goes (reports/ui is ignored by
// git, beside the product's browser tests' screenshots).
const demoShot = "../reports/ui/demo-lifecycle.png"

// shootDemo opens the demo's UI in headless chromium as a person would: it
// logs in through the printed login URL, opens the demo's lifecycle, which
// must await approval with the patch's diff shown, and saves a screenshot.
// A missing chromium fails the test (.ci/run installs it).
func shootDemo(t *testing.T, login, lcy string) {
	t.Helper()
	chromium := os.Getenv("NEEDLE_CHROMIUM")
	if chromium == "" {
		var err error
		if chromium, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("chromium is not installed (apt-get install chromium; .ci/run installs it): the demo's browser check needs it")
		}
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancel()
	ctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	if d, ok := t.Deadline(); ok {
		var cancel3 context.CancelFunc
		ctx, cancel3 = context.WithDeadline(ctx, d.Add(-30e9))
		defer cancel3()
	}
	base := strings.Split(login, "/login")[0]
	if err := chromedp.Do(ctx, chromedp.Navigate(login), chromedp.WaitVisible(`#live.live-live`),
		chromedp.Navigate(base+"/#/lifecycles/"+lcy), chromedp.WaitVisible(`#diff figure.diff-file`)); err != nil {
		t.Fatalf("the demo's lifecycle page in chromium: %v", err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(`#lcd-h`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, lcy) {
		t.Errorf("the lifecycle page's heading %q does not name %s", page, lcy)
	}
	diff, err := chromedp.Run(ctx, chromedp.Text(`#diff`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "search.go") || !strings.Contains(diff, "carriage return") {
		t.Errorf("the demo's diff does not show the change to search.go's comment:\n%s", diff)
	}
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.MkdirAll(filepath.Dir(demoShot), 0o755)
	}
	if err == nil {
		err = os.WriteFile(demoShot, buf, 0o644)
	}
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
}
