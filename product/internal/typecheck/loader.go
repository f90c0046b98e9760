package typecheck

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"go/version"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"lukechampine.com/blake3"
)

// Options configure a Loader. GOROOT and ModCache are what `go env GOROOT
// GOMODCACHE` print for the toolchain the snapshot is built with.
type Options struct {
	GOROOT    string
	ModCache  string // may be empty: then every third-party import is missing
	GOOS      string // default: the build context's
	GOARCH    string // default: the build context's
	BuildTags []string
	// MaxRoots bounds the checked root packages kept for reuse (default 64).
	MaxRoots int
	// MaxPackages bounds every package kept for reuse (default 4096): past
	// it, a Load starts from an empty cache and a new FileSet, so that a
	// long-lived Loader over an edited repository does not grow forever.
	MaxPackages int
}

// A Loader type-checks packages of snapshots and keeps what it checked for
// reuse. Dependencies (the standard library, the module cache, packages of
// the repository not asked about) are checked without function bodies and
// cached under a key that covers their files' digests and their own
// dependencies' keys, so a later Load pays only for what changed. It is safe
// for concurrent use; loads are serialized.
type Loader struct {
	mu      sync.Mutex
	opts    Options
	ctxt    build.Context
	sizes   types.Sizes
	goroot  string // GOROOT's version line, part of every standard-library key
	fset    *token.FileSet
	deps    map[string]*checked    // by key
	listing map[string]*dirListing // by immutable directory
	roots   map[string]*checked    // by key
	order   []string               // roots keys, oldest first
}

// checked is one type-checked package.
type checked struct {
	key     string
	types   *types.Package
	info    *types.Info // roots only
	files   []*File     // roots only
	errs    []error
	missing map[string]string // missing import paths in its closure → why
}

// NewLoader returns a Loader for the toolchain at opts.GOROOT.
func NewLoader(opts Options) (*Loader, error) {
	if opts.GOROOT == "" {
		return nil, errors.New("typecheck: Options.GOROOT is required")
	}
	ver, err := os.ReadFile(filepath.Join(opts.GOROOT, "VERSION"))
	if err != nil {
		return nil, fmt.Errorf("typecheck: read toolchain version: %w", err)
	}
	first, _, _ := strings.Cut(string(ver), "\n")
	ctxt := build.Default
	ctxt.GOROOT = opts.GOROOT
	ctxt.GOPATH = ""
	ctxt.CgoEnabled = false
	ctxt.BuildTags = slices.Clone(opts.BuildTags)
	if opts.GOOS != "" {
		ctxt.GOOS = opts.GOOS
	}
	if opts.GOARCH != "" {
		ctxt.GOARCH = opts.GOARCH
	}
	if tags := releaseTags(first); tags != nil {
		ctxt.ReleaseTags = tags
	}
	if opts.MaxRoots <= 0 {
		opts.MaxRoots = 64
	}
	if opts.MaxPackages <= 0 {
		opts.MaxPackages = 4096
	}
	return &Loader{
		opts:    opts,
		ctxt:    ctxt,
		sizes:   types.SizesFor("gc", ctxt.GOARCH),
		goroot:  first,
		fset:    token.NewFileSet(),
		deps:    map[string]*checked{},
		listing: map[string]*dirListing{},
		roots:   map[string]*checked{},
	}, nil
}

// releaseTags returns go1.1 … go1.N for a toolchain version line such as
// "go1.26.8", nil if the line is not one.
func releaseTags(v string) []string {
	lang := version.Lang(v)
	minor, err := strconv.Atoi(strings.TrimPrefix(lang, "go1."))
	if lang == "" || err != nil {
		return nil
	}
	tags := make([]string, 0, minor)
	for i := 1; i <= minor; i++ {
		tags = append(tags, "go1."+strconv.Itoa(i))
	}
	return tags
}

// Load type-checks the packages that hold files (slash paths relative to
// the root of src), with their tests: the package of a directory together
// with its in-package _test.go files, and its external test package. A
// problem confined to one file (not Go, excluded by build constraints, not
// in a module) is recorded for that file and reported by PackageOf; Load
// itself fails only when ctx is done or the loader breaks.
func (l *Loader) Load(ctx context.Context, src Source, files ...string) (*Program, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.deps)+len(l.roots) > l.opts.MaxPackages {
		l.fset = token.NewFileSet()
		l.deps, l.roots, l.order = map[string]*checked{}, map[string]*checked{}, nil
		l.listing = map[string]*dirListing{}
	}
	s := &session{
		l: l, ctx: ctx, src: src,
		lists:   map[string]*buildList{},
		modRoot: map[string]string{},
		rootIDs: map[string]bool{},
		pkgs:    map[string]*resolved{},
		loading: map[string]bool{},
		deps:    map[string]string{},
		dirs:    map[string]bool{},
		prog:    &Program{fset: l.fset, byFile: map[string]*Package{}, fileErr: map[string]error{}},
		files:   files,
	}
	roots := s.rootDirs(files)
	s.markRootIDs(roots, files)
	for _, r := range roots {
		bl := s.lists[r.mod]
		if bl == nil {
			continue
		}
		if _, err := s.load(bl, bl.importPath(r.dir), false); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if _, ok := s.prog.byFile[f]; !ok && s.prog.fileErr[f] == nil {
			s.prog.fileErr[f] = &Error{Kind: KindNotInBuild, Path: f, Err: errors.New("no package of this build holds the file")}
		}
	}
	s.finish()
	return s.prog, nil
}

// rootDir is a directory of a file given to Load, with its module root.
type rootDir struct{ mod, dir string }

// rootDirs returns the distinct directories of the Go files given to Load,
// in order, recording a file error for each file that has none.
func (s *session) rootDirs(files []string) []rootDir {
	var roots []rootDir
	seen := map[rootDir]bool{}
	for _, f := range files {
		if err := checkRel(f); err != nil {
			s.prog.fileErr[f] = &Error{Kind: KindNoModule, Path: f, Err: err}
			continue
		}
		if !strings.HasSuffix(f, ".go") {
			s.prog.fileErr[f] = &Error{Kind: KindNotGo, Path: f}
			continue
		}
		mod, err := s.moduleRoot(path.Dir(f))
		if err != nil {
			s.prog.fileErr[f] = err
			continue
		}
		if r := (rootDir{mod, path.Dir(f)}); !seen[r] {
			seen[r] = true
			roots = append(roots, r)
		}
	}
	return roots
}

// markRootIDs reads the build list of each root's module and marks the
// root packages' import paths before any is loaded; a module whose build
// list cannot be read fails the Go files of its directories.
func (s *session) markRootIDs(roots []rootDir, files []string) {
	for _, r := range roots {
		bl, err := s.buildList(r.mod)
		if err != nil {
			for _, f := range files {
				if strings.HasSuffix(f, ".go") && path.Dir(f) == r.dir {
					s.prog.fileErr[f] = err
				}
			}
			continue
		}
		s.rootIDs[bl.importPath(r.dir)] = true
	}
}

// session is the state of one Load.
type session struct {
	l       *Loader
	ctx     context.Context
	src     Source
	lists   map[string]*buildList // by module root
	modRoot map[string]string     // directory → module root ("" if none)
	files   []string              // the files asked about: evidence of a module-less repository's import path
	rootIDs map[string]bool       // import paths of the directories asked about
	pkgs    map[string]*resolved  // by package id, this load
	loading map[string]bool
	deps    map[string]string // Source files read → digest
	dirs    map[string]bool   // Source directories listed
	prog    *Program
}

// resolved is a package as this load sees it.
type resolved struct {
	id  string
	chk *checked
}

// moduleRoot finds the nearest directory at or above dir holding go.mod.
func (s *session) moduleRoot(dir string) (string, error) {
	if r, ok := s.modRoot[dir]; ok {
		if r == "" {
			return "", &Error{Kind: KindNoModule, Path: dir}
		}
		return r, nil
	}
	for d := dir; ; d = path.Dir(d) {
		if _, _, err := s.src.ReadFile(path.Join(d, "go.mod")); err == nil {
			s.modRoot[dir] = d
			return d, nil
		}
		if d == "." {
			// No go.mod anywhere above: the repository is module-less
			// (GOPATH-era code); its root stands in for the module.
			s.modRoot[dir] = "."
			return ".", nil
		}
	}
}

func (s *session) buildList(root string) (*buildList, error) {
	if bl, ok := s.lists[root]; ok {
		return bl, nil
	}
	bl, err := readBuildList(s.src, root, s.l.opts.ModCache)
	if root == "." && errors.Is(err, fs.ErrNotExist) {
		// A module-less repository: a main module without requirements at
		// the root, whose path its own files tell (moduleless.go). Whether
		// a go.mod appears is in the root's listing.
		bl, err = modulelessBuildList(s.src, s.files), nil
		s.dirs["."] = true
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = &Error{Kind: KindGoMod, Path: path.Join(root, "go.mod"), Err: err}
		}
		return nil, err
	}
	for _, d := range bl.deps {
		s.deps[d.Path] = d.Digest
	}
	s.lists[root] = bl
	return bl, nil
}

// importPath is the import path of a directory of the main module.
func (bl *buildList) importPath(dir string) string {
	if dir == bl.main.rel {
		return bl.main.path
	}
	rel := strings.TrimPrefix(dir, bl.main.rel+"/")
	if bl.main.rel == "." {
		rel = dir
	}
	return bl.main.path + "/" + rel
}

// location is where an import path's files are.
type location struct {
	id        string // the package's identity: the import path, or vendor/… for the standard library's vendored packages
	rel, abs  string // a Source directory, or an immutable one on disk
	std       bool
	goVersion string
	missing   string // why it cannot be read, "" if it can
}

// locate resolves an import path seen in a package of the given kind.
func (s *session) locate(bl *buildList, importPath string, fromStd bool) location {
	goroot := filepath.Join(s.l.opts.GOROOT, "src")
	if isStd(importPath) {
		dir := filepath.Join(goroot, filepath.FromSlash(importPath))
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return location{id: importPath, abs: dir, std: true}
		}
		return location{id: importPath, missing: "not in the standard library of " + s.l.goroot}
	}
	if fromStd {
		dir := filepath.Join(goroot, "vendor", filepath.FromSlash(importPath))
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return location{id: "vendor/" + importPath, abs: dir, std: true}
		}
	}
	mod := bl.moduleFor(importPath)
	if mod == bl.main {
		rel := path.Join(bl.main.rel, strings.TrimPrefix(strings.TrimPrefix(importPath, bl.main.path), "/"))
		if nestedModule(s.src, bl.main.rel, rel) {
			return location{id: importPath, missing: "in a nested module of " + bl.main.path}
		}
		return location{id: importPath, rel: rel, goVersion: bl.main.goVersion}
	}
	if bl.vendor {
		return location{id: importPath, rel: path.Join(bl.main.rel, "vendor", importPath), goVersion: bl.main.goVersion}
	}
	if mod == nil {
		return location{id: importPath, missing: "no required module provides it"}
	}
	if mod.missing != "" {
		return location{id: importPath, missing: mod.missing}
	}
	sub := strings.TrimPrefix(strings.TrimPrefix(importPath, mod.path), "/")
	if mod.rel != "" {
		return location{id: importPath, rel: path.Join(mod.rel, sub), goVersion: mod.goVersion}
	}
	return location{id: importPath, abs: filepath.Join(mod.abs, filepath.FromSlash(sub)), goVersion: mod.goVersion}
}

// load returns the package at importPath: the one asked about (with its
// tests, checked with bodies), or a dependency.
func (s *session) load(bl *buildList, importPath string, fromStd bool) (*resolved, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	loc := s.locate(bl, importPath, fromStd)
	if r, ok := s.pkgs[loc.id]; ok {
		return r, nil
	}
	if s.loading[loc.id] {
		return s.fake(loc.id, "import cycle"), nil
	}
	if loc.missing != "" {
		return s.fake(loc.id, loc.missing), nil
	}
	s.loading[loc.id] = true
	defer delete(s.loading, loc.id)
	root := loc.rel != "" && s.rootIDs[loc.id]
	files, err := s.list(loc, root)
	if err != nil {
		return nil, err
	}
	if len(files.main) == 0 && len(files.test) == 0 && len(files.xtest) == 0 {
		return s.fake(loc.id, "no Go files for this build in its directory"), nil
	}
	r, err := s.check(bl, loc, files.main, files.test, files.imports, root)
	if err != nil {
		return nil, err
	}
	s.pkgs[loc.id] = r
	if root && len(files.xtest) > 0 {
		xloc := loc
		xloc.id = loc.id + "_test"
		x, err := s.check(bl, xloc, files.xtest, nil, nil, true)
		if err != nil {
			return nil, err
		}
		s.pkgs[xloc.id] = x
	}
	return r, nil
}

// fake stands in for a package whose source cannot be read: an empty,
// complete package, so that every use of it is a type error confined to the
// expressions that use it.
func (s *session) fake(id, why string) *resolved {
	name := path.Base(id)
	if i := strings.LastIndex(name, ".v"); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(strings.ReplaceAll(name, "-", "_"), "go_")
	key := hashKey("typecheck.missing.v1", id, why)
	chk, ok := s.l.deps[key]
	if !ok {
		p := types.NewPackage(id, name)
		p.MarkComplete()
		chk = &checked{key: key, types: p, missing: map[string]string{id: why}}
		s.l.deps[key] = chk
	}
	r := &resolved{id: id, chk: chk}
	s.pkgs[id] = r
	return r
}

// srcFile is a Go file selected for a package.
type srcFile struct {
	name   string // the FileSet name: the Source path, or the absolute path
	data   []byte // nil for immutable files until parsed
	digest string // "" for immutable files
}

type fileSets struct {
	main, test, xtest []srcFile
	imports           []string // of main, when known from the listing
}

// list selects the files of the package at loc for this build: build
// constraints and file-name suffixes as the go command applies them (cgo
// disabled), split by package clause into the package, its in-package tests
// and its external tests (the latter two only for roots).
func (s *session) list(loc location, root bool) (fileSets, error) {
	if loc.abs != "" {
		return s.listImmutable(loc.abs)
	}
	entries, err := s.src.ReadDir(loc.rel)
	if err != nil {
		return fileSets{}, nil // no directory: no files
	}
	s.dirs[loc.rel] = true
	data := map[string][]byte{}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".go") || (!root && strings.HasSuffix(n, "_test.go")) {
			continue
		}
		p := path.Join(loc.rel, n)
		b, digest, err := s.src.ReadFile(p)
		if err != nil {
			continue
		}
		s.deps[p] = digest
		data[p] = b
		names = append(names, n)
	}
	ctxt := s.l.ctxt
	ctxt.JoinPath = path.Join
	ctxt.OpenFile = func(p string) (io.ReadCloser, error) {
		if b, ok := data[p]; ok {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
		return nil, os.ErrNotExist
	}
	var out fileSets
	var pkgName string
	sort.Strings(names)
	for _, n := range names {
		if ok, err := ctxt.MatchFile(loc.rel, n); err != nil || !ok {
			continue
		}
		p := path.Join(loc.rel, n)
		f := srcFile{name: p, data: data[p], digest: FileDigest(data[p])}
		clause := packageClause(f.data)
		switch {
		case !strings.HasSuffix(n, "_test.go"):
			if pkgName == "" {
				pkgName = clause
			}
			if clause == pkgName || clause == "" {
				out.main = append(out.main, f)
			}
		case strings.HasSuffix(clause, "_test") && clause != "_test":
			out.xtest = append(out.xtest, f)
		default:
			out.test = append(out.test, f)
		}
	}
	return out, nil
}

// dirListing is what a directory of the Go root or the module cache holds
// for this build. Its content never changes, so it is read once per Loader.
type dirListing struct {
	names   []string // build files, sorted
	imports []string // their imports, sorted
}

func (s *session) listImmutable(dir string) (fileSets, error) {
	dl, ok := s.l.listing[dir]
	if !ok {
		dl = &dirListing{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fileSets{}, nil
		}
		var pkgName string
		imports := map[string]bool{}
		for _, e := range entries {
			n := e.Name()
			if !e.Type().IsRegular() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			if ok, err := s.l.ctxt.MatchFile(dir, n); err != nil || !ok {
				continue
			}
			af, _ := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.ImportsOnly)
			if af == nil || af.Name == nil || af.Name.Name == "documentation" {
				continue
			}
			if pkgName == "" {
				pkgName = af.Name.Name
			}
			if af.Name.Name != pkgName {
				continue
			}
			dl.names = append(dl.names, n)
			for _, imp := range af.Imports {
				if p, err := strconv.Unquote(imp.Path.Value); err == nil {
					imports[p] = true
				}
			}
		}
		for p := range imports {
			dl.imports = append(dl.imports, p)
		}
		sort.Strings(dl.imports)
		s.l.listing[dir] = dl
	}
	out := fileSets{imports: dl.imports}
	for _, n := range dl.names {
		out.main = append(out.main, srcFile{name: filepath.Join(dir, n)})
	}
	return out, nil
}

// packageClause returns the package name a file declares, "" if it has
// none that parses.
func packageClause(data []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", data, parser.PackageClauseOnly)
	if err != nil || f.Name == nil {
		return ""
	}
	return f.Name.Name
}

// check parses and type-checks one package (main files plus, for a root,
// its in-package tests), after loading its imports, reusing a cached result
// whose key matches.
func (s *session) check(bl *buildList, loc location, mainFiles, testFiles []srcFile, imports []string, root bool) (*resolved, error) {
	all := slices.Concat(mainFiles, testFiles)
	// Imports first: the key covers them, and checking needs them.
	if imports == nil {
		imports = importsOf(all)
	}
	key, deps, missing, err := s.loadImports(bl, loc, all, imports, root)
	if err != nil {
		return nil, err
	}
	cache := s.l.deps
	if root {
		cache = s.l.roots
	}
	if c, ok := cache[key]; ok {
		r := &resolved{id: loc.id, chk: c}
		if root {
			s.register(bl, loc, c)
		}
		return r, nil
	}
	syntax, files := s.parseFiles(all, root)
	c := &checked{key: key, missing: missing}
	s.typeCheck(c, loc, deps, syntax, files, root)
	if root {
		s.l.putRoot(c)
		s.register(bl, loc, c)
	} else {
		s.l.deps[key] = c
	}
	return &resolved{id: loc.id, chk: c}, nil
}

// loadImports loads the package's imports and returns its cache key (over
// its location, build context, files and its imports' keys), the loaded
// imports by path and the unreadable paths in its closure.
func (s *session) loadImports(bl *buildList, loc location, all []srcFile, imports []string, root bool) (string, map[string]*resolved, map[string]string, error) {
	fromStd := loc.std
	deps := map[string]*resolved{}
	missing := map[string]string{}
	keyParts := []string{loc.id, loc.rel, loc.abs, loc.goVersion, s.l.ctxtKey(), strconv.FormatBool(root)}
	if loc.std {
		keyParts = append(keyParts, s.l.goroot)
	}
	for _, f := range all {
		keyParts = append(keyParts, f.name, f.digest)
	}
	if root && strings.HasSuffix(loc.id, "_test") {
		// An external test imports the package under test by its path.
		if under, ok := s.pkgs[strings.TrimSuffix(loc.id, "_test")]; ok {
			deps[strings.TrimSuffix(loc.id, "_test")] = under
		}
	}
	for _, ip := range imports {
		if ip == "C" || ip == "unsafe" {
			continue
		}
		if _, ok := deps[ip]; ok {
			keyParts = append(keyParts, ip, deps[ip].chk.key)
			continue
		}
		r, err := s.load(bl, ip, fromStd)
		if err != nil {
			return "", nil, nil, err
		}
		deps[ip] = r
		keyParts = append(keyParts, ip, r.chk.key)
		for m, why := range r.chk.missing {
			missing[m] = why
		}
	}
	return hashKey("typecheck.pkg.v1", keyParts...), deps, missing, nil
}

// parseFiles parses the package's files, keeping comments and the Files
// that questions are answered from only for a root package.
func (s *session) parseFiles(all []srcFile, root bool) ([]*ast.File, []*File) {
	mode := parser.SkipObjectResolution
	if root {
		mode |= parser.ParseComments
	}
	var syntax []*ast.File
	var files []*File
	for _, f := range all {
		var src any // nil: the parser reads the immutable file itself
		if f.data != nil {
			src = f.data
		}
		af, perr := parser.ParseFile(s.l.fset, f.name, src, mode)
		if af == nil {
			continue
		}
		syntax = append(syntax, af)
		if root {
			files = append(files, &File{Path: f.name, Syntax: af, ParseErr: perr})
		}
	}
	return syntax, files
}

// typeCheck type-checks syntax into c against the loaded imports; only a
// root package keeps function bodies, type information and its files.
func (s *session) typeCheck(c *checked, loc location, deps map[string]*resolved, syntax []*ast.File, files []*File, root bool) {
	conf := types.Config{
		Importer:         importerFunc(func(p string) (*types.Package, error) { return importFrom(deps, p) }),
		GoVersion:        langVersion(loc.goVersion),
		IgnoreFuncBodies: !root,
		FakeImportC:      true,
		Sizes:            s.l.sizes,
		Error: func(err error) {
			if len(c.errs) < maxErrors {
				c.errs = append(c.errs, err)
			}
		},
	}
	if root {
		c.info = &types.Info{
			Types:      map[ast.Expr]types.TypeAndValue{},
			Defs:       map[*ast.Ident]types.Object{},
			Uses:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
			Instances:  map[*ast.Ident]types.Instance{},
		}
		c.files = files
	}
	name := loc.id
	c.types, _ = conf.Check(name, s.l.fset, syntax, c.info)
}

// maxErrors bounds the type errors kept per package.
const maxErrors = 100

// register makes a checked root package answerable by file.
func (s *session) register(bl *buildList, loc location, c *checked) {
	p := &Package{Path: loc.id, Dir: loc.rel, Types: c.types, Info: c.info, Files: c.files, Errors: c.errs, prog: s.prog,
		ModulePath: bl.main.path, ModuleDir: bl.main.rel, Moduleless: bl.moduleless}
	for m := range c.missing {
		p.Missing = append(p.Missing, m)
	}
	sort.Strings(p.Missing)
	s.prog.pkgs = append(s.prog.pkgs, p)
	for _, f := range c.files {
		s.prog.byFile[f.Path] = p
	}
}

// importsOf returns the sorted import paths of files.
func importsOf(files []srcFile) []string {
	set := map[string]bool{}
	for _, f := range files {
		data := f.data
		if data == nil {
			b, err := os.ReadFile(f.name)
			if err != nil {
				continue
			}
			data = b
		}
		af, _ := parser.ParseFile(token.NewFileSet(), "", data, parser.ImportsOnly)
		if af == nil {
			continue
		}
		for _, imp := range af.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil {
				set[p] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (s *session) finish() {
	for p, d := range s.deps {
		s.prog.Deps = append(s.prog.Deps, FileDep{Path: p, Digest: d})
	}
	sort.Slice(s.prog.Deps, func(i, j int) bool { return s.prog.Deps[i].Path < s.prog.Deps[j].Path })
	for d := range s.dirs {
		s.prog.Dirs = append(s.prog.Dirs, d)
	}
	sort.Strings(s.prog.Dirs)
	s.prog.Missing = map[string]string{}
	for _, r := range s.pkgs {
		for m, why := range r.chk.missing {
			s.prog.Missing[m] = why
		}
	}
}

func (l *Loader) putRoot(c *checked) {
	if _, ok := l.roots[c.key]; ok {
		return
	}
	l.roots[c.key] = c
	l.order = append(l.order, c.key)
	for len(l.order) > l.opts.MaxRoots {
		delete(l.roots, l.order[0])
		l.order = l.order[1:]
	}
}

func (l *Loader) ctxtKey() string {
	return strings.Join([]string{l.ctxt.GOOS, l.ctxt.GOARCH, strings.Join(l.ctxt.BuildTags, ","), strings.Join(l.ctxt.ReleaseTags, ",")}, "/")
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func importFrom(deps map[string]*resolved, p string) (*types.Package, error) {
	if p == "unsafe" {
		return types.Unsafe, nil
	}
	if r, ok := deps[p]; ok && r.chk.types != nil {
		return r.chk.types, nil
	}
	return nil, fmt.Errorf("package %s not loaded", p)
}

// langVersion turns a go directive ("1.21", "1.22.3") into a language
// version go/types accepts, "" (the latest) when it is not one.
func langVersion(goDirective string) string {
	if goDirective == "" {
		return ""
	}
	v := version.Lang("go" + goDirective)
	if !version.IsValid(v) {
		return ""
	}
	return v
}

func hashKey(tag string, parts ...string) string {
	h := blake3.New(32, nil)
	h.Write([]byte(tag))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
