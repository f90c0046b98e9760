package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// serveStep starts needle serve on the demo's data directory and prints
// its login URL; then it waits for an interrupt (--wait, or stdin a
// terminal), or logs in itself to show the UI answers; then it stops the
// runtime.
func (d *demoRun) serveStep() error {
	if d.o.noServe {
		d.say("\n6. needle serve skipped (--no-serve).")
		return nil
	}
	d.say("\n6. The resident runtime: needle serve holds the data directory and serves the web UI and the")
	d.say("   API on loopback; a browser logs in once through the one-time login URL.")
	d.say("   $ needle serve --data-dir data")
	cmd := exec.Command(d.o.needle, "serve", "--data-dir", "data")
	cmd.Dir = d.dir
	// Its own process group: a Ctrl-C reaches the demo, which stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	login, err := d.readServe(pipe)
	if err == nil {
		go io.Copy(io.Discard, pipe)
		err = d.showUI(login)
	}
	if serr := stopServe(cmd); err == nil && serr != nil {
		err = fmt.Errorf("needle serve: %v: %s", serr, strings.TrimSpace(stderr.String()))
	}
	if err == nil {
		d.say("   needle serve stopped.")
	}
	return err
}

// readServe prints what needle serve prints until its socket (its last
// start line) and returns the login URL.
func (d *demoRun) readServe(r io.Reader) (string, error) {
	var login string
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		l := lines.Text()
		d.say("   %s", l)
		if u, ok := strings.CutPrefix(l, "log in: "); ok {
			login = u
		}
		if strings.HasPrefix(l, "ipc: ") {
			if login == "" {
				return "", errors.New("needle serve printed no login URL")
			}
			return login, nil
		}
	}
	return "", errors.New("needle serve exited before it listened")
}

// showUI waits for an interrupt with --wait; otherwise it logs in through
// the login URL as a browser would and reports what the UI answered.
func (d *demoRun) showUI(login string) error {
	if d.o.wait {
		d.say("   Open the log-in URL in a browser: the need feed, the evidence, and the change awaiting")
		d.say("   approval (approve and apply it there). Press Ctrl-C to stop.")
		<-d.ctx.Done()
		d.say("")
		return nil
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := client.Get(login)
	if err != nil {
		return fmt.Errorf("step 6: the login URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(jar.Cookies(resp.Request.URL)) == 0 {
		return fmt.Errorf("step 6: the login URL answered %s without a session", resp.Status)
	}
	d.say("   → the demo logged in with that URL (%s, session cookie set): the UI answers at %s.", resp.Status, resp.Request.URL)
	d.say("     stdin is not a terminal, so the demo stops the runtime now (--wait keeps it until Ctrl-C).")
	return nil
}

// stopServe stops needle serve with SIGTERM and waits for its clean exit.
func stopServe(cmd *exec.Cmd) error {
	_ = cmd.Process.Signal(syscall.SIGTERM) // it may have exited already; Wait says how
	return cmd.Wait()
}
