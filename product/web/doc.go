// Package web holds the resident runtime's embedded UI and the contract of
// the JSON API it consumes (api.go). It knows nothing of Needle's engine:
// the runtime (product/runtime_api.go) serves Assets and implements the
// routes api.go describes. The DTOs live here, not in package product, on
// purpose: this package cannot import product, so no response type can
// embed a domain record by accident — every field is projected by hand.
//
// The UI is TypeScript and React (from npm, pinned by package-lock.json)
// in src/, bundled by `go generate ./product/web`, which runs
// internal/build: it installs the npm packages if node_modules is missing
// (npm ci), type-checks with tsc, and bundles with esbuild's Go API into
// dist/: assets/app-HASH.js and .css, named by a hash of their content and
// so served with a year's cache, and the index.html that names them (never
// cached without validation). dist/ is committed and embedded, so building
// Needle needs no Node; internal/build's test fails when dist/ is not what
// the sources build.
//
// The page has no inline script or style, loads nothing from another
// origin, and works under the guard's Content-Security-Policy.
//
//	api.go       the /api/v1 DTOs and routes (the contract)
//	assets.go    the embedded dist/ and its handler
//	index.html   the page shell (dist/index.html names the hashed assets)
//	src/         the React application (api.ts mirrors api.go); app.tsx the
//	             shell and routes, src/views/ one file a view: feed (and
//	             accounting), evidence, lifecycles, lifecycle, review (the
//	             diff, criteria and model text a person judges), approval
//	             (the two-step approval, apply, reject, cancel), common
//	internal/build     the generator (esbuild Go API)
//
// The browser tests (chromedp driving chromium) run against a real
// `needle serve` in package product (runtime_browser_test.go). To work on
// the UI, run needle serve on a scratch data directory, make it some
// history with the needle commands, and rebuild with go generate.
package web

//go:generate go run ./internal/build
