package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultLoginPath  = "/login"
	DefaultCookieName = "needle_session"
	DefaultLoginTTL   = 10 * time.Minute
	DefaultSessionTTL = 12 * time.Hour
	// MaxLoginCodes and MaxSessions bound what the guard keeps: the oldest
	// pending code or session is forgotten first.
	MaxLoginCodes = 16
	MaxSessions   = 64
)

// ContentSecurityPolicy is sent with every response: scripts, styles and
// connections only from the server itself, no inline script or style
// markup, no framing, no plugins, forms only to itself.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Config configures a Guard.
type Config struct {
	// Token is the bearer token (NewSecret's shape).
	Token string
	// Addr is the bound loopback address; the Host header must be exactly
	// its literal spelling and the Origin of state-changing requests
	// "http://" + that.
	Addr netip.AddrPort
	// Public reports the requests served without authentication (the UI's
	// static assets, which hold no data); only GET and HEAD can be public.
	Public func(*http.Request) bool
	// LoginPath is where login codes are exchanged (DefaultLoginPath);
	// LoginRedirect where a successful login lands ("/").
	LoginPath, LoginRedirect string
	// CookieName names the session cookie (DefaultCookieName).
	CookieName string
	// LoginTTL and SessionTTL bound the life of a login code and of a
	// session (DefaultLoginTTL, DefaultSessionTTL).
	LoginTTL, SessionTTL time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// Refused, if set, hears every refusal (for a log or a counter).
	Refused func(r *http.Request, status int, reason string)
	// LoginHelp is plain text that the page of a refused login adds: how
	// to get a new login link.
	LoginHelp string
}

// Guard authenticates and screens the requests of one loopback server.
type Guard struct {
	cfg    Config
	host   string // the one acceptable Host header
	origin string // the one acceptable Origin
	token  [sha256.Size]byte

	mu       sync.Mutex
	codes    map[[sha256.Size]byte]time.Time // pending login codes → expiry
	sessions map[[sha256.Size]byte]time.Time // session ids → expiry
}

// New returns a Guard for cfg.
func New(cfg Config) (*Guard, error) {
	if !validSecret(cfg.Token) {
		return nil, errors.New("httpguard: the token is not a 256-bit hex secret")
	}
	if !cfg.Addr.IsValid() || !cfg.Addr.Addr().Unmap().IsLoopback() || cfg.Addr.Port() == 0 {
		return nil, fmt.Errorf("httpguard: %v is not a bound loopback address", cfg.Addr)
	}
	if cfg.LoginPath == "" {
		cfg.LoginPath = DefaultLoginPath
	}
	if cfg.LoginRedirect == "" {
		cfg.LoginRedirect = "/"
	}
	if cfg.CookieName == "" {
		cfg.CookieName = DefaultCookieName
	}
	if cfg.LoginTTL <= 0 {
		cfg.LoginTTL = DefaultLoginTTL
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Public == nil {
		cfg.Public = func(*http.Request) bool { return false }
	}
	host := cfg.Addr.String() // "127.0.0.1:80", "[::1]:80"
	return &Guard{
		cfg:      cfg,
		host:     host,
		origin:   "http://" + host,
		token:    sha256.Sum256([]byte(cfg.Token)),
		codes:    make(map[[sha256.Size]byte]time.Time),
		sessions: make(map[[sha256.Size]byte]time.Time),
	}, nil
}

// Origin returns the server's origin, "http://127.0.0.1:PORT".
func (g *Guard) Origin() string { return g.origin }

// LoginURL mints a one-time login code and returns the URL that exchanges
// it for a session.
func (g *Guard) LoginURL() string {
	code := NewSecret()
	now := g.cfg.Now()
	g.mu.Lock()
	forgetOldest(g.codes, MaxLoginCodes-1, now)
	g.codes[sha256.Sum256([]byte(code))] = now.Add(g.cfg.LoginTTL)
	g.mu.Unlock()
	return g.origin + g.cfg.LoginPath + "?code=" + code
}

// forgetOldest drops expired entries of m, then the soonest to expire
// until at most keep remain.
func forgetOldest(m map[[sha256.Size]byte]time.Time, keep int, now time.Time) {
	for k, exp := range m {
		if !now.Before(exp) {
			delete(m, k)
		}
	}
	for len(m) > keep {
		var oldest [sha256.Size]byte
		var when time.Time
		first := true
		for k, exp := range m {
			if first || exp.Before(when) {
				oldest, when, first = k, exp, false
			}
		}
		delete(m, oldest)
	}
}

// authenticated reports whether r carries the token or a live session.
func (g *Guard) authenticated(r *http.Request) bool {
	bearer, hasBearer, ok := bearerToken(r)
	if !ok {
		return false
	}
	if hasBearer {
		got := sha256.Sum256([]byte(bearer))
		return subtle.ConstantTimeCompare(got[:], g.token[:]) == 1
	}
	return g.validSession(r)
}

// Handler screens every request before next sees it. A request that is
// refused, or that is served without authentication (a public asset), is
// answered with Connection: close, so only an authenticated connection is
// kept idle between requests (http.Server.IdleTimeout).
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		if r.Host != g.host {
			g.refuse(w, r, http.StatusMisdirectedRequest, "bad_host", "the Host header does not name this server")
			return
		}
		if r.URL.Path == g.cfg.LoginPath {
			g.login(w, r)
			return
		}
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		if safe && g.cfg.Public(r) {
			if !g.authenticated(r) {
				// An unauthenticated connection is not kept idle.
				w.Header().Set("Connection", "close")
			}
			next.ServeHTTP(w, r)
			return
		}
		bearer, hasBearer, ok := bearerToken(r)
		switch {
		case !ok:
			g.refuse(w, r, http.StatusUnauthorized, "unauthorized", "malformed Authorization header")
			return
		case hasBearer:
			got := sha256.Sum256([]byte(bearer))
			if subtle.ConstantTimeCompare(got[:], g.token[:]) != 1 {
				g.refuse(w, r, http.StatusUnauthorized, "unauthorized", "wrong token")
				return
			}
		default:
			if !g.validSession(r) {
				g.refuse(w, r, http.StatusUnauthorized, "unauthorized", "log in through the login URL, or send Authorization: Bearer")
				return
			}
			// Fetch Metadata: a cookie request must come from this server's
			// own pages, or (safe methods) from the user typing the URL.
			site := r.Header.Get("Sec-Fetch-Site")
			if site != "" && site != "same-origin" && !(safe && site == "none") {
				g.refuse(w, r, http.StatusForbidden, "forbidden_origin", "cross-site request")
				return
			}
		}
		if !safe {
			if reason := g.checkWrite(r, hasBearer); reason != "" {
				status := http.StatusForbidden
				kind := "forbidden_origin"
				if reason == errContentType {
					status, kind = http.StatusUnsupportedMediaType, "unsupported_media_type"
				}
				g.refuse(w, r, status, kind, reason)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

const errContentType = "a state-changing request must be application/json"

// checkWrite screens a state-changing request: its Origin is this server's
// (a non-browser client holding the token may send none), and its body is
// JSON, which no cross-site HTML form can send.
func (g *Guard) checkWrite(r *http.Request, bearer bool) string {
	origins := r.Header.Values("Origin")
	switch {
	case len(origins) > 1:
		return "more than one Origin header"
	case len(origins) == 1 && origins[0] != g.origin:
		return "foreign Origin"
	case len(origins) == 0 && !bearer:
		return "a browser request without Origin"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "cross-site request"
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errContentType
	}
	return ""
}

// bearerToken returns the token of an "Authorization: Bearer" header: has
// is false without the header, ok false for a malformed one (another
// scheme, several headers, empty token).
func bearerToken(r *http.Request) (tok string, has, ok bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", false, true
	}
	if len(vals) > 1 {
		return "", true, false
	}
	scheme, tok, found := strings.Cut(vals[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", true, false
	}
	return tok, true, true
}

// validSession reports whether r carries a live session cookie.
func (g *Guard) validSession(r *http.Request) bool {
	c, err := r.Cookie(g.cfg.CookieName)
	if err != nil || !validSecret(c.Value) {
		return false
	}
	key := sha256.Sum256([]byte(c.Value))
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.sessions[key]
	if ok && !now.Before(exp) {
		delete(g.sessions, key)
		return false
	}
	return ok
}

// login exchanges a one-time code for a session cookie.
func (g *Guard) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		g.refuseLogin(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "log in with GET of the login URL")
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		g.refuseLogin(w, r, http.StatusForbidden, "forbidden_origin", "a login link followed from another site")
		return
	}
	code := r.URL.Query().Get("code")
	if !validSecret(code) || !g.takeCode(code) {
		g.refuseLogin(w, r, http.StatusForbidden, "login_refused", "this login link is unknown, expired or already used; ask the runtime for a new one")
		return
	}
	sid := NewSecret()
	now := g.cfg.Now()
	g.mu.Lock()
	forgetOldest(g.sessions, MaxSessions-1, now)
	g.sessions[sha256.Sum256([]byte(sid))] = now.Add(g.cfg.SessionTTL)
	g.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name:     g.cfg.CookieName,
		Value:    sid,
		Path:     "/",
		MaxAge:   int(g.cfg.SessionTTL / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, g.cfg.LoginRedirect, http.StatusSeeOther)
}

// takeCode consumes code if it is pending and unexpired.
func (g *Guard) takeCode(code string) bool {
	key := sha256.Sum256([]byte(code))
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.codes[key]
	delete(g.codes, key)
	return ok && now.Before(exp)
}

// Logout ends the session of r, if any.
func (g *Guard) Logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(g.cfg.CookieName); err == nil {
		g.mu.Lock()
		delete(g.sessions, sha256.Sum256([]byte(c.Value)))
		g.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: g.cfg.CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// setHeaders sets the security headers every response carries.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Refusal is the JSON body of a refused request.
type Refusal struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// loginPage is the page of a refused login: a person followed the link
// in a browser, so the refusal is a page, not JSON.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Needle: login refused</title></head>
<body><main id="login-refused" data-kind="{{.Kind}}">
<h1>Needle: this login link does not work</h1>
<p role="alert">{{.Message}}.</p>
{{if .Help}}<p>{{.Help}}</p>{{end}}
</main></body></html>
`))

// refuseLogin refuses a login with an HTML page that says why and how to
// get a new link.
func (g *Guard) refuseLogin(w http.ResponseWriter, r *http.Request, status int, kind, msg string) {
	if g.cfg.Refused != nil {
		g.cfg.Refused(r, status, kind+": "+msg)
	}
	h := w.Header()
	h.Set("Connection", "close")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	loginPage.Execute(w, struct{ Kind, Message, Help string }{kind, strings.ToUpper(msg[:1]) + msg[1:], g.cfg.LoginHelp})
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, status int, kind, msg string) {
	if g.cfg.Refused != nil {
		g.cfg.Refused(r, status, kind+": "+msg)
	}
	var body Refusal
	body.Error.Kind, body.Error.Message = kind, msg
	h := w.Header()
	// A refused connection is closed after the answer, never kept idle.
	h.Set("Connection", "close")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="needle"`)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
