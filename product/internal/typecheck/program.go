package typecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"sort"
)

// Program is the result of one Load: the packages asked about, checked with
// function bodies, and what the check depended on.
type Program struct {
	fset    *token.FileSet
	pkgs    []*Package
	byFile  map[string]*Package
	fileErr map[string]error

	// Deps are the files of the Source the check read, with the digests of
	// the bytes it read: go.mod files and every Go file of the repository's
	// packages in the closure (those excluded by build constraints too, since
	// editing a constraint changes the package). A proof from this Program
	// holds for as long as these are unchanged.
	Deps []FileDep
	// Dirs are the Source directories whose listings decided which files a
	// package has: adding a file there can change the answer.
	Dirs []string
	// Missing maps the import paths the closure needed but could not read
	// (not in the module cache, no module provides them, …) to why.
	Missing map[string]string
}

// FileDep is a file a check read and the digest of what it read.
type FileDep struct {
	Path   string
	Digest string
}

// Package is a package asked about: its declarations, syntax and types.
type Package struct {
	// Path is the import path; an external test package's ends in "_test".
	Path string
	Dir  string // Source directory
	// ModulePath and ModuleDir are the main module the package belongs to:
	// its path and the Source directory of its go.mod ("." at the root).
	ModulePath, ModuleDir string
	// Moduleless: the repository has no go.mod at all (code from before
	// modules); ModulePath is inferred (ModulePathOf) and ModuleDir is ".".
	Moduleless bool
	Types      *types.Package
	Info       *types.Info
	Files      []*File
	// Errors are the type errors of the package (at most 100). They never
	// make a question fail by themselves: only an answer that depends on
	// an invalid type does.
	Errors []error
	// Missing are the import paths in the package's closure that could not
	// be read (see Program.Missing).
	Missing []string
	prog    *Program
}

// File is one file of a Package.
type File struct {
	Path     string // Source path
	Syntax   *ast.File
	ParseErr error // the file parsed only partly
}

// Span is an inclusive range of 1-based lines of one file.
type Span struct {
	Start, End int
}

// Contains reports whether line lies in s.
func (s Span) Contains(line int) bool { return s.Start <= line && line <= s.End }

// Within reports whether s lies entirely in o.
func (s Span) Within(o Span) bool { return o.Start <= s.Start && s.End <= o.End }

// PackageOf returns the package holding file (a Source path given to Load),
// or the typed error recorded for it: KindNotGo, KindNoModule, KindGoMod,
// KindNotInBuild, or KindParse when the file itself parsed only partly.
func (p *Program) PackageOf(file string) (*Package, error) {
	if err := p.fileErr[file]; err != nil {
		return nil, err
	}
	pkg := p.byFile[file]
	if pkg == nil {
		return nil, &Error{Kind: KindNotInBuild, Path: file}
	}
	if f := pkg.file(file); f != nil && f.ParseErr != nil {
		return pkg, &Error{Kind: KindParse, Path: file, Err: f.ParseErr}
	}
	return pkg, nil
}

// Packages returns the packages of the Program, sorted by import path.
func (p *Program) Packages() []*Package {
	out := append([]*Package(nil), p.pkgs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Name returns the package name.
func (pkg *Package) Name() string { return pkg.Types.Name() }

func (pkg *Package) file(p string) *File {
	for _, f := range pkg.Files {
		if f.Path == p {
			return f
		}
	}
	return nil
}

// position returns the Source path and line of pos, with ok false when pos
// is not in a file of the repository (the Go root, the module cache).
func (p *Program) position(pos token.Pos) (file string, line int, ok bool) {
	if !pos.IsValid() {
		return "", 0, false
	}
	ps := p.fset.Position(pos)
	if path.IsAbs(ps.Filename) || ps.Filename == "" {
		return ps.Filename, ps.Line, false
	}
	return ps.Filename, ps.Line, true
}

// span returns the lines from pos to end.
func (p *Program) span(pos, end token.Pos) Span {
	return Span{Start: p.fset.Position(pos).Line, End: p.fset.Position(end).Line}
}
