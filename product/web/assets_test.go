package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestHandler_Caching: the page is revalidated on every load, and the
// hashed assets it names are cached for a year; a name that is not built is
// a 404 without the long cache.
func TestHandler_Caching(t *testing.T) {
	h := Handler()
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	page := get("/")
	if page.Code != http.StatusOK || page.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /: %d, Cache-Control %q", page.Code, page.Header().Get("Cache-Control"))
	}
	names := regexp.MustCompile(`"(/assets/app-[A-Z0-9]+\.(?:js|css))"`).FindAllStringSubmatch(page.Body.String(), -1)
	if len(names) != 2 {
		t.Fatalf("the page names %d hashed assets, want 2:\n%s", len(names), page.Body)
	}
	for _, m := range names {
		a := get(m[1])
		if a.Code != http.StatusOK || a.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || a.Body.Len() == 0 {
			t.Errorf("GET %s: %d, Cache-Control %q, %d bytes", m[1], a.Code, a.Header().Get("Cache-Control"), a.Body.Len())
		}
	}
	if old := get("/assets/app.js"); old.Code != http.StatusNotFound || strings.Contains(old.Header().Get("Cache-Control"), "max-age") {
		t.Errorf("GET /assets/app.js: %d, Cache-Control %q; want a 404 that is not cached", old.Code, old.Header().Get("Cache-Control"))
	}
	if route := get("/lifecycles/lcy_0"); route.Code != http.StatusOK || route.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("a client-side route: %d, Cache-Control %q", route.Code, route.Header().Get("Cache-Control"))
	}
}
