package typecheck

import (
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"
)

// ModulelessPath is the module path of a module-less repository whose own
// files do not tell its import path: nothing can import it.
const ModulelessPath = "moduleless.invalid"

// modulelessBuildList is the build of a repository with no go.mod at all
// (code from before modules): its root is the main module, it requires
// nothing (every third-party import is missing), and its language version
// is the toolchain's, as in GOPATH mode.
func modulelessBuildList(src Source, files []string) *buildList {
	return &buildList{
		main:       &gomod{path: ModulePathOf(src, files), rel: "."},
		mods:       map[string]*gomod{},
		moduleless: true,
	}
}

// ModulePathOf infers the import path of a module-less repository from its
// own files in the directories of files: a canonical import comment
// (package x // import "p"), or an external test package (package x_test)
// importing the package it tests, whose path ends with the directory's.
// Without either it is ModulelessPath.
func ModulePathOf(src Source, files []string) string {
	seen := map[string]bool{}
	for _, f := range files {
		dir := path.Dir(f)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		entries, err := src.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			data, _, err := src.ReadFile(path.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			if p, ok := importPathIn(dir, data); ok {
				return p
			}
		}
	}
	return ModulelessPath
}

// importPathIn returns the module path one file of dir implies.
func importPathIn(dir string, data []byte) (string, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", data, parser.ImportsOnly|parser.ParseComments)
	if err != nil || f.Name == nil {
		return "", false
	}
	trim := func(p string) (string, bool) {
		if dir == "." {
			return p, p != ""
		}
		rest, ok := strings.CutSuffix(p, "/"+dir)
		return rest, ok && rest != ""
	}
	// A canonical import comment on the package clause's line.
	line := fset.Position(f.Name.Pos()).Line
	for _, c := range f.Comments {
		if fset.Position(c.Pos()).Line != line {
			continue
		}
		if text, ok := strings.CutPrefix(strings.TrimSpace(c.List[0].Text), "// import "); ok {
			if p, err := strconv.Unquote(strings.TrimSpace(text)); err == nil {
				return trim(p)
			}
		}
	}
	// An external test package imports the package it tests.
	base, xtest := strings.CutSuffix(f.Name.Name, "_test")
	if !xtest {
		return "", false
	}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.Contains(p, ".") {
			continue // the standard library
		}
		switch {
		case dir == "." && path.Base(p) == base:
			return p, true
		case dir != "." && path.Base(p) == path.Base(dir):
			if m, ok := trim(p); ok {
				return m, true
			}
		}
	}
	return "", false
}
