// Package httpguard protects a loopback HTTP server that a browser and local
// API clients talk to: who may call it, from which page, under which name,
// and what the browser may do with the answers. It knows nothing about the
// routes it guards.
//
// # Threats and answers
//
//   - Another machine: ListenLoopback binds only loopback literals
//     (127.0.0.0/8, ::1) or localhost when every address it resolves to is
//     loopback; an empty host, 0.0.0.0, a LAN address or another name is an
//     *AddrError before anything listens.
//   - Another local user or program: every non-public request needs either
//     the bearer token (Authorization: Bearer, compared in constant time) or
//     a session cookie. The token is 256 random bits kept 0600 in the data
//     directory (LoadOrCreateToken, written atomically).
//   - A web page in the user's browser (CSRF, DNS rebinding): the Host
//     header must be exactly the bound literal host:port, so a rebound
//     attacker name never reaches a handler; every state-changing request
//     (anything but GET and HEAD) must carry the server's own Origin — or,
//     from a non-browser client, no Origin and the bearer token — and a JSON
//     content type, which a cross-site HTML form cannot send; Fetch Metadata
//     (Sec-Fetch-Site) other than same-origin is refused on cookie requests.
//     The session cookie is HttpOnly and SameSite=Strict.
//   - Script injection and framing: every response carries a
//     Content-Security-Policy without inline scripts or styles, nosniff,
//     X-Frame-Options DENY, frame-ancestors 'none' and no-referrer.
//
// # Login
//
// The browser never sees the token. LoginURL mints a one-time code (256
// bits, short-lived, bounded in number) and returns the URL that carries it;
// GET of that URL exchanges the code for a session cookie (a new random id
// whose hash the guard keeps, bounded and expiring) and redirects to the
// UI, removing the code from the address bar. A used, expired or unknown
// code is refused. Sessions live in memory: a restart logs everyone out.
//
// Cookies are not isolated by port, so another server on the same loopback
// host would be sent the cookie; it grants only a session of this process,
// never the token.
package httpguard
