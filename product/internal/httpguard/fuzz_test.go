package httpguard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// FuzzHandler throws arbitrary header values at the guard and checks, by
// rules stated independently of the guard's code, that a request reaching
// the handler had the exact Host and the exact token (no session exists in
// this guard), and that a state-changing one had the server's Origin or
// none.
func FuzzHandler(f *testing.F) {
	const token = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	const host = "127.0.0.1:4321"
	f.Add("GET", host, "", "Bearer "+token, "", "", "")
	f.Add("POST", host, "http://"+host, "Bearer "+token, "", "application/json", "same-origin")
	f.Add("POST", "evil.example:4321", "http://evil.example", "bearer "+token, "needle_session=x", "text/plain", "cross-site")
	f.Add("DELETE", host, "null", "Basic x", "needle_session="+token, "application/json", "none")
	g, err := New(Config{Token: token, Addr: netip.MustParseAddrPort(host)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, hostHdr, origin, auth, cookie, ctype, site string) {
		r, err := http.NewRequest(method, "http://"+host+"/api/v1/x", nil)
		if err != nil {
			return // not a method net/http would ever hand a handler
		}
		r.Host = hostHdr
		for k, v := range map[string]string{"Origin": origin, "Authorization": auth, "Cookie": cookie, "Content-Type": ctype, "Sec-Fetch-Site": site} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		reached := false
		w := httptest.NewRecorder()
		g.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(w, r)
		if w.Header().Get("Content-Security-Policy") != ContentSecurityPolicy {
			t.Fatal("response without the CSP")
		}
		if !reached {
			return
		}
		if hostHdr != host {
			t.Fatalf("Host %q reached the handler", hostHdr)
		}
		if scheme, tok, _ := strings.Cut(auth, " "); !strings.EqualFold(scheme, "bearer") || tok != token {
			t.Fatalf("Authorization %q reached the handler", auth)
		}
		if r.Method != "GET" && r.Method != "HEAD" && origin != "" && origin != "http://"+host {
			t.Fatalf("%s with Origin %q reached the handler", r.Method, origin)
		}
	})
}
