package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed dist
var dist embed.FS

// Assets is the built UI: index.html and assets/.
var Assets, _ = fs.Sub(dist, "dist")

// Handler serves the UI: /assets/* as files, cached for a year (their
// names carry a hash of their content, so new content is a new name), and
// index.html, never cached without validation, for / and for every other
// GET path that is not an API route, so that a reload of a client-side
// route works.
func Handler() http.Handler {
	files := http.FileServerFS(Assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/assets/") {
			// A name that is not there may be one day: only a built
			// asset is cached.
			if _, err := fs.Stat(Assets, strings.TrimPrefix(r.URL.Path, "/")); err == nil {
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			files.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, Assets, "index.html")
	})
}

// IsAsset reports whether r asks for the UI rather than the API: the
// guard serves these without a session, since they hold no data.
func IsAsset(r *http.Request) bool {
	p := r.URL.Path
	return p == "/" || p == "/index.html" || strings.HasPrefix(p, "/assets/")
}
