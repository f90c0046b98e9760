// Command build bundles the web UI into product/web/dist with esbuild's Go
// API: `go generate ./product/web` runs it in product/web. It installs the
// pinned npm packages when node_modules is missing (npm ci: the lockfile
// decides), type-checks the sources with tsc, bundles src/main.tsx (React,
// minified, production) into dist/assets/app-HASH.js and app-HASH.css
// (the hash is of the content), and writes index.html naming them. The output is committed; the test in this directory fails
// when it is not what the sources build.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

// run builds the UI of the web directory dir into dir/dist.
func run(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := install(dir); err != nil {
		return err
	}
	if err := typecheck(dir); err != nil {
		return err
	}
	files, err := bundle(dir)
	if err != nil {
		return err
	}
	dist := filepath.Join(dir, "dist")
	if err := os.RemoveAll(dist); err != nil {
		return err
	}
	for _, name := range sortedNames(files) {
		path := filepath.Join(dist, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// install runs npm ci when dir has no node_modules.
func install(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", dir, err)
	}
	return nil
}

// typecheck runs the pinned TypeScript compiler without emitting: esbuild
// strips types without checking them.
func typecheck(dir string) error {
	cmd := exec.Command("node", filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("tsc: %w\n%s", err, out)
	}
	return nil
}

// bundle builds the UI in memory: dist-relative name → content.
func bundle(dir string) (map[string][]byte, error) {
	dir, err := filepath.Abs(dir) // esbuild wants an absolute working directory
	if err != nil {
		return nil, err
	}
	res := api.Build(api.BuildOptions{
		AbsWorkingDir:     dir,
		EntryPoints:       []string{"src/main.tsx"},
		EntryNames:        "app-[hash]", // a new name for new content: served with a long cache
		Outdir:            filepath.Join(dir, "dist", "assets"),
		Bundle:            true,
		Write:             false,
		Platform:          api.PlatformBrowser,
		Format:            api.FormatIIFE,
		Target:            api.ES2020,
		JSX:               api.JSXAutomatic,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		Charset:           api.CharsetUTF8,
		LegalComments:     api.LegalCommentsEndOfFile,
		Define:            map[string]string{"process.env.NODE_ENV": `"production"`},
		LogLevel:          api.LogLevelWarning,
	})
	if len(res.Errors) > 0 {
		msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return nil, fmt.Errorf("esbuild:\n%s", strings.Join(msgs, ""))
	}
	files := make(map[string][]byte)
	dist := filepath.Join(dir, "dist")
	for _, f := range res.OutputFiles {
		rel, err := filepath.Rel(dist, f.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("esbuild wrote %s outside dist", f.Path)
		}
		files[filepath.ToSlash(rel)] = f.Contents
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		return nil, err
	}
	// index.html names the unhashed assets; the built page names the
	// hashed ones esbuild made.
	for _, ext := range []string{".js", ".css"} {
		name := assetName(files, ext)
		if name == "" {
			return nil, fmt.Errorf("esbuild made no assets/app-HASH%s", ext)
		}
		plain := "/assets/app" + ext
		if !bytes.Contains(index, []byte(`"`+plain+`"`)) {
			return nil, fmt.Errorf("index.html does not name %s", plain)
		}
		index = bytes.ReplaceAll(index, []byte(`"`+plain+`"`), []byte(`"/`+name+`"`))
	}
	files["index.html"] = index
	return files, nil
}

// assetName is the dist-relative name of the one built asset with the
// extension ext ("assets/app-HASH.js"), or "".
func assetName(files map[string][]byte, ext string) string {
	found := ""
	for name := range files {
		if strings.HasPrefix(name, "assets/app-") && strings.HasSuffix(name, ext) {
			if found != "" {
				return ""
			}
			found = name
		}
	}
	return found
}

func sortedNames(m map[string][]byte) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// readDist reads dir/dist as bundle returns it.
func readDist(dir string) (map[string][]byte, error) {
	files := make(map[string][]byte)
	root := filepath.Join(dir, "dist")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	return files, err
}

// diff names the files of got that differ from want.
func diff(got, want map[string][]byte) []string {
	var out []string
	for _, n := range sortedNames(got) {
		if w, ok := want[n]; !ok || !bytes.Equal(w, got[n]) {
			out = append(out, n)
		}
	}
	for _, n := range sortedNames(want) {
		if _, ok := got[n]; !ok {
			out = append(out, n+" (stale)")
		}
	}
	return out
}
