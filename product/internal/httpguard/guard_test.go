package httpguard

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// server is a guarded loopback server whose handler answers "ok".
type server struct {
	*httptest.Server
	guard *Guard
	token string
	clock *fakeClock
	host  string
}

func newServer(t *testing.T) *server {
	t.Helper()
	l, err := ListenLoopback(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{token: NewSecret(), clock: &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	s.host = l.Addr().String()
	s.guard, err = New(Config{
		Token:     s.token,
		Addr:      netip.MustParseAddrPort(s.host),
		Now:       s.clock.Now,
		LoginHelp: "run needle ui <for> a new link",
		Public:    func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/assets/") || r.URL.Path == "/" },
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	s.Server = httptest.NewUnstartedServer(s.guard.Handler(mux))
	s.Server.Listener.Close()
	s.Server.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// client never follows redirects, so a test sees the login's 303.
func client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// req describes one request.
type req struct {
	method, path, host, origin, auth, cookie, ctype, site string
}

func (s *server) do(t *testing.T, q req) *http.Response {
	t.Helper()
	resp, _ := s.doBody(t, q)
	return resp
}

// doBody is do that also returns the answer's body.
func (s *server) doBody(t *testing.T, q req) (*http.Response, []byte) {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodGet
	}
	var body io.Reader
	if q.method == http.MethodPost {
		body = strings.NewReader(`{}`)
	}
	r, err := http.NewRequest(q.method, s.URL+q.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.host != "" {
		r.Host = q.host
	}
	for k, v := range map[string]string{"Origin": q.origin, "Authorization": q.auth, "Cookie": q.cookie, "Content-Type": q.ctype, "Sec-Fetch-Site": q.site} {
		if v != "" {
			r.Header.Set(k, v)
		}
	}
	resp, err := client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, data
}

// login exchanges a fresh login URL and returns the session cookie header.
func (s *server) login(t *testing.T) string {
	t.Helper()
	u, _ := url.Parse(s.guard.LoginURL())
	resp := s.do(t, req{path: u.Path + "?" + u.RawQuery})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Name != DefaultCookieName {
		t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if strings.Contains(c.Value, s.token) {
		t.Fatal("the session cookie carries the token")
	}
	return c.Name + "=" + c.Value
}

func TestGuard_Handler(t *testing.T) {
	s := newServer(t)
	bearer := "Bearer " + s.token
	cookie := s.login(t)
	origin := "http://" + s.host
	// Each case is one request; want is the status. The refusals are the
	// security test list of the runtime, counted below.
	cases := []struct {
		name string
		req  req
		want int
	}{
		{"BearerOK", req{path: "/api/v1/x", auth: bearer}, 200},
		{"BearerSchemeCaseOK", req{path: "/api/v1/x", auth: "bearer " + s.token}, 200},
		{"CookieOK", req{path: "/api/v1/x", cookie: cookie}, 200},
		{"CookieSameOriginFetchOK", req{path: "/api/v1/x", cookie: cookie, site: "same-origin"}, 200},
		{"CookieTypedURLOK", req{path: "/api/v1/x", cookie: cookie, site: "none"}, 200},
		{"PublicOK", req{path: "/assets/app.js"}, 200},
		{"PostBearerNoOriginOK", req{method: "POST", path: "/api/v1/a", auth: bearer, ctype: "application/json"}, 200},
		{"PostBearerSameOriginOK", req{method: "POST", path: "/api/v1/a", auth: bearer, origin: origin, ctype: "application/json; charset=utf-8"}, 200},
		{"PostCookieSameOriginOK", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: origin, ctype: "application/json", site: "same-origin"}, 200},

		{"ErrNoToken", req{path: "/api/v1/x"}, 401},
		{"ErrWrongToken", req{path: "/api/v1/x", auth: "Bearer " + NewSecret()}, 401},
		{"ErrWrongTokenWithCookie", req{path: "/api/v1/x", auth: "Bearer nope", cookie: cookie}, 401},
		{"ErrTokenPrefix", req{path: "/api/v1/x", auth: "Bearer " + s.token[:63]}, 401},
		{"ErrBasicAuth", req{path: "/api/v1/x", auth: "Basic " + s.token}, 401},
		{"ErrTokenAsCookie", req{path: "/api/v1/x", cookie: DefaultCookieName + "=" + s.token}, 401},
		{"ErrForgedCookie", req{path: "/api/v1/x", cookie: DefaultCookieName + "=" + NewSecret()}, 401},
		{"ErrPublicPost", req{method: "POST", path: "/assets/app.js", ctype: "application/json", origin: origin}, 401},
		{"ErrBadHost", req{path: "/api/v1/x", auth: bearer, host: "evil.example:" + s.URL[strings.LastIndexByte(s.URL, ':')+1:]}, 421},
		{"ErrBadHostLocalhost", req{path: "/api/v1/x", auth: bearer, host: "localhost" + s.host[strings.LastIndexByte(s.host, ':'):]}, 421},
		{"ErrBadHostPort", req{path: "/api/v1/x", auth: bearer, host: "127.0.0.1:1"}, 421},
		{"ErrBadHostPublic", req{path: "/assets/app.js", host: "rebound.example"}, 421},
		{"ErrBadHostLogin", req{path: "/login?code=" + NewSecret(), host: "rebound.example"}, 421},
		{"ErrForeignOriginBearer", req{method: "POST", path: "/api/v1/a", auth: bearer, origin: "http://evil.example", ctype: "application/json"}, 403},
		{"ErrForeignOriginCookie", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: "http://evil.example", ctype: "application/json"}, 403},
		{"ErrOtherPortOrigin", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: "http://127.0.0.1:1", ctype: "application/json"}, 403},
		{"ErrNullOrigin", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: "null", ctype: "application/json"}, 403},
		{"ErrCookiePostNoOrigin", req{method: "POST", path: "/api/v1/a", cookie: cookie, ctype: "application/json"}, 403},
		{"ErrCrossSiteFormPost", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: "http://evil.example", ctype: "application/x-www-form-urlencoded", site: "cross-site"}, 403},
		{"ErrSameOriginFormPost", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: origin, ctype: "text/plain"}, 415},
		{"ErrCrossSiteFetchMetadata", req{method: "POST", path: "/api/v1/a", cookie: cookie, origin: origin, ctype: "application/json", site: "cross-site"}, 403},
		{"ErrCrossSiteGet", req{path: "/api/v1/x", cookie: cookie, site: "cross-site"}, 403},
		{"ErrSameSiteGet", req{path: "/api/v1/x", cookie: cookie, site: "same-site"}, 403},
		{"ErrLoginPost", req{method: "POST", path: "/login", ctype: "application/json", origin: origin}, 405},
		{"ErrLoginGarbage", req{path: "/login?code=abc"}, 403},
		{"ErrLoginUnknown", req{path: "/login?code=" + NewSecret()}, 403},
		{"ErrLoginToken", req{path: "/login?code=" + s.token}, 403},
	}
	refused := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := s.do(t, c.req)
			if resp.StatusCode != c.want {
				t.Fatalf("%s %s: %s, want %d", c.req.method, c.req.path, resp.Status, c.want)
			}
			checkHeaders(t, resp.Header)
			// Only an authenticated connection stays open for another
			// request.
			authed := c.want < 400 && c.req.path != "/assets/app.js"
			if resp.Close == authed {
				t.Errorf("connection closed after the answer: %v, want %v", resp.Close, !authed)
			}
			// A refused login is a page for the person who followed the
			// link; every other refusal is JSON.
			want := "application/json"
			if strings.HasPrefix(c.req.path, "/login") && c.want != http.StatusMisdirectedRequest {
				want = "text/html; charset=utf-8"
			}
			if c.want >= 400 && resp.Header.Get("Content-Type") != want {
				t.Errorf("refusal Content-Type %q, want %q", resp.Header.Get("Content-Type"), want)
			}
		})
		if c.want >= 400 {
			refused++
		}
	}
	t.Logf("security cases refused: %d of %d", refused, len(cases))
}

func checkHeaders(t *testing.T, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %q", csp)
	}
}

func TestGuard_Login(t *testing.T) {
	t.Run("ErrReused", func(t *testing.T) {
		s := newServer(t)
		u := s.guard.LoginURL()
		if !strings.HasPrefix(u, "http://"+s.host+"/login?code=") {
			t.Fatalf("LoginURL %q", u)
		}
		p, _ := url.Parse(u)
		if resp := s.do(t, req{path: p.RequestURI()}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first use: %s", resp.Status)
		}
		resp, body := s.doBody(t, req{path: p.RequestURI()})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("second use: %s, want 403", resp.Status)
		}
		// The browser that followed the link shows a page that says why
		// and what to do, not a JSON body.
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("a used login link answers %q, want an HTML page", ct)
		}
		for _, want := range []string{"<h1>", "already used", "run needle ui &lt;for&gt; a new link"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("the refused login's page lacks %q:\n%s", want, body)
			}
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		s := newServer(t)
		p, _ := url.Parse(s.guard.LoginURL())
		s.clock.Add(DefaultLoginTTL)
		if resp := s.do(t, req{path: p.RequestURI()}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("expired code: %s, want 403", resp.Status)
		}
	})
	t.Run("ErrCrossSiteLink", func(t *testing.T) {
		s := newServer(t)
		p, _ := url.Parse(s.guard.LoginURL())
		if resp := s.do(t, req{path: p.RequestURI(), site: "cross-site"}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site login: %s, want 403", resp.Status)
		}
	})
	t.Run("SessionExpires", func(t *testing.T) {
		s := newServer(t)
		cookie := s.login(t)
		s.clock.Add(DefaultSessionTTL - time.Second)
		if resp := s.do(t, req{path: "/api/v1/x", cookie: cookie}); resp.StatusCode != 200 {
			t.Fatalf("live session: %s", resp.Status)
		}
		s.clock.Add(time.Second)
		if resp := s.do(t, req{path: "/api/v1/x", cookie: cookie}); resp.StatusCode != 401 {
			t.Fatalf("expired session: %s, want 401", resp.Status)
		}
	})
	t.Run("BoundedCodes", func(t *testing.T) {
		s := newServer(t)
		first, _ := url.Parse(s.guard.LoginURL())
		var last *url.URL
		for i := 0; i < MaxLoginCodes; i++ {
			s.clock.Add(time.Millisecond) // distinct expiries: the first is the oldest
			last, _ = url.Parse(s.guard.LoginURL())
		}
		if resp := s.do(t, req{path: first.RequestURI()}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("the oldest of %d codes: %s, want 403", MaxLoginCodes+1, resp.Status)
		}
		if resp := s.do(t, req{path: last.RequestURI()}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the newest code: %s", resp.Status)
		}
	})
	t.Run("Logout", func(t *testing.T) {
		s := newServer(t)
		cookie := s.login(t)
		r := httptest.NewRequest("POST", "/logout", nil)
		r.Header.Set("Cookie", cookie)
		w := httptest.NewRecorder()
		s.guard.Logout(w, r)
		if resp := s.do(t, req{path: "/api/v1/x", cookie: cookie}); resp.StatusCode != 401 {
			t.Fatalf("after logout: %s, want 401", resp.Status)
		}
	})
}

func TestNew(t *testing.T) {
	good := netip.MustParseAddrPort("127.0.0.1:8080")
	for name, cfg := range map[string]Config{
		"ErrShortToken": {Token: "abc", Addr: good},
		"ErrNoAddr":     {Token: NewSecret()},
		"ErrPortZero":   {Token: NewSecret(), Addr: netip.MustParseAddrPort("127.0.0.1:0")},
		"ErrLAN":        {Token: NewSecret(), Addr: netip.MustParseAddrPort("192.168.1.2:8080")},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestLimitListener: past its limit a listener answers a new connection
// 503 and closes it, and a closed connection frees its slot.
func TestLimitListener(t *testing.T) {
	inner, err := ListenLoopback(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(inner, 1)
	defer l.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := dial()
	defer first.Close()
	held := <-accepted
	second := dial() // past the limit
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatalf("the connection past the limit: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close ||
		string(body) != "too many connections: the server's limit\r\n" {
		t.Errorf("past the limit: %s %v %q", resp.Status, resp.Header, body)
	}
	second.Close()
	held.Close()
	held.Close() // twice frees one slot
	third := dial()
	defer third.Close()
	if c := <-accepted; c == nil {
		t.Fatal("no connection accepted after a slot freed")
	} else {
		c.Close()
	}
}
