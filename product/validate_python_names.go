package product

import (
	"slices"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product/internal/pydecl"
)

// Names a Python symbol has outside the file that declares it, as Python
// resolves them and as users write them:
//
//   - a module's re-export: markdown.markdown is the function of
//     markdown/core.py when markdown/__init__.py does `from .core import
//     markdown` (as, or * without an __all__; through modules in between
//     too; a plain module's import re-exports as a package's does);
//   - an inherited method: TextElement.astext is Element.astext when
//     TextElement's method resolution order (C3, over the file's own
//     classes) reaches Element first among the classes defining astext.
//
// Both are read from the source, not by importing it, and the
// certificate says so (static). What the source cannot settle leaves the
// proposal undecided: a name the module binds under an if or try (a
// TYPE_CHECKING import, an ImportError fallback), a star import from a
// module with an __all__, a base class the file does not declare (or
// binds twice) that comes first in the order. The last binding of a name
// in a module is the one Python keeps; overload stubs are not the
// function.

// maxReexportHops bounds the modules a re-export is followed through.
const maxReexportHops = 4

// pyModulePath is the dotted module of a repository file: pkg/mod.py is
// pkg.mod, pkg/__init__.py is pkg.
func pyModulePath(rel string) string {
	m := strings.TrimSuffix(strings.TrimSuffix(rel, ".py"), "/__init__")
	return strings.ReplaceAll(m, "/", ".")
}

// pyBeyond resolves the subject beyond f's own names (pyNames gave names):
// through a re-export, then through inheritance. It returns the
// declarations of f it names, with the static note to record, or why the
// source cannot tell (undecided).
func (val *validator) pyBeyond(f *pydecl.File, s Subject, rel string, names []string) (found []pydecl.Decl, note, undecided string) {
	re, via, why := val.pyReexported(s, rel)
	if why != "" {
		return nil, "", why
	}
	for _, name := range re {
		found = append(found, pyRuntimeDecls(f.Lookup(name))...)
	}
	if len(found) > 0 {
		return found, "static: that " + s.Name + " is " + pyModulePath(rel) + "'s " + found[0].Name + " was judged from the imports of " + strings.Join(via, " and ") + ", not by importing it", ""
	}
	inherited, from, hidden := pyInherited(f, append(names, re...))
	switch {
	case hidden != "":
		return nil, "", hidden
	case len(inherited) > 0:
		return inherited, "static: that " + s.Name + " is inherited from " + from + " was judged by the method resolution order of the classes " + rel + " declares, not by importing it", ""
	}
	inherited, from, hidden = val.pyInheritedAcross(s, rel)
	switch {
	case hidden != "":
		return nil, "", hidden
	case len(inherited) > 0:
		return inherited, "static: that " + s.Name + " is inherited from " + from + " was judged by the method resolution order of its class across the modules its bases are imported from, not by importing them", ""
	}
	return nil, "", ""
}

// pyRuntimeDecls are the declarations of one name that Python keeps: an
// overload stub (@overload, @typing.overload) is replaced by the function
// defined after it.
func pyRuntimeDecls(found []pydecl.Decl) []pydecl.Decl {
	stub := func(d pydecl.Decl) bool {
		return slices.ContainsFunc(d.Decorators, func(dec string) bool { return dec == "overload" || strings.HasSuffix(dec, ".overload") })
	}
	if !slices.ContainsFunc(found, func(d pydecl.Decl) bool { return !stub(d) }) {
		return found
	}
	return slices.DeleteFunc(slices.Clone(found), stub)
}

// pyReexported returns the names in rel's module that the subject names
// through modules re-exporting them, and the files whose imports said so;
// why, when not "", says what the source cannot settle.
func (val *validator) pyReexported(s Subject, rel string) (names, via []string, why string) {
	mod := pyModulePath(rel)
	parts := strings.Split(strings.TrimSuffix(strings.TrimSpace(s.Name), "()"), ".")
	for k := len(parts) - 1; k >= 1; k-- {
		head := strings.Join(parts[:k], ".")
		if head == mod {
			continue // the module's own names: pyNames
		}
		name, files, why := val.pyFollowReexport(head, parts[k:], mod, maxReexportHops)
		if why != "" {
			return nil, nil, why
		}
		if name != "" {
			names, via = append(names, name), append(via, files...)
		}
	}
	return names, via, ""
}

// pyModuleFile reads the repository's file of a dotted module (its
// __init__.py, else its .py) with Python's parser; nil when there is none
// or it cannot be read.
func (val *validator) pyModuleFile(module string) (*pydecl.File, string) {
	base := strings.ReplaceAll(module, ".", "/")
	for _, rel := range []string{base + "/__init__.py", base + ".py"} {
		src, _, err := val.repo.ReadFileMax(rel, maxCitedFileBytes)
		if err != nil {
			continue
		}
		r := val.vs.pyDecls(val.ctx, src)
		if r.file == nil || r.fallback != "" || r.undecided != "" || r.file.SyntaxError != nil {
			return nil, ""
		}
		return r.file, rel
	}
	return nil, ""
}

// pyFollowReexport follows tail (a name and its attributes) from module's
// last binding of tail[0] to the module target, through the modules
// between. It returns the name in target, or "" when module does not
// re-export it from there; why says what the source cannot settle.
func (val *validator) pyFollowReexport(module string, tail []string, target string, hops int) (name string, files []string, why string) {
	if hops == 0 {
		return "", nil, ""
	}
	f, rel := val.pyModuleFile(module)
	if f == nil {
		return "", nil, ""
	}
	// The last binding of the name at the module's top level decides: a
	// definition there (the module's own), or an import; a star import
	// binds it only if its module does.
	own := 0
	for _, d := range f.Lookup(tail[0]) {
		own = max(own, d.Line)
	}
	from, orig := "", ""
	for i := len(f.Imports) - 1; i >= 0 && from == ""; i-- {
		im := f.Imports[i]
		imported, ok := im.Imported(tail[0])
		if im.Line < own {
			break
		}
		if !ok || imported == "*" && strings.HasPrefix(tail[0], "_") {
			continue
		}
		source := pyImportedModule(module, rel, im)
		if imported == "*" {
			binds, why := val.pyStarBinds(source, tail[0])
			if why != "" {
				return "", nil, rel + " imports * from " + source + ": " + why
			}
			if !binds {
				continue
			}
			imported = tail[0]
		}
		if im.Cond {
			return "", nil, rel + " binds " + tail[0] + " under an if or try (line " + strconv.Itoa(im.Line) + "): which binding holds is not known from the source"
		}
		from, orig = source, imported
	}
	if from == "" {
		return "", nil, "" // the module's own, or not bound there
	}
	name = strings.Join(append([]string{orig}, tail[1:]...), ".")
	if from == target {
		return name, []string{rel}, ""
	}
	got, more, why := val.pyFollowReexport(from, strings.Split(name, "."), target, hops-1)
	if got == "" || why != "" {
		return "", nil, why
	}
	return got, append([]string{rel}, more...), ""
}

// pyStarBinds reports whether `from module import *` binds name: whether
// the repository's module binds it at its top level (a definition or an
// import by name). why says what the source cannot settle: an __all__,
// or a star import of its own that may bind it. A module outside the
// repository binds nothing Needle can see.
func (val *validator) pyStarBinds(module, name string) (binds bool, why string) {
	f, _ := val.pyModuleFile(module)
	if f == nil {
		return false, ""
	}
	if len(f.Lookup("__all__")) > 0 {
		return false, "its __all__, which Needle does not read, says what it exports"
	}
	if len(f.Lookup(name)) > 0 {
		return true, ""
	}
	for _, im := range f.Imports {
		if imported, ok := im.Imported(name); ok {
			if imported == "*" {
				return false, "it imports * itself, which may bind " + name
			}
			return true, ""
		}
	}
	return false, ""
}

// pyImportedModule is the absolute module an import of module reads from
// ("" when a relative import climbs above the repository), rel being
// module's file: a package when it is an __init__.py; a relative import in
// a plain module counts from the package holding it.
func pyImportedModule(module, rel string, im pydecl.Import) string {
	if im.Level == 0 {
		return im.Module
	}
	base := strings.Split(module, ".")
	if !strings.HasSuffix(rel, "__init__.py") {
		base = base[:len(base)-1] // a plain module's package
	}
	if im.Level-1 >= len(base) {
		return ""
	}
	base = base[:len(base)-(im.Level-1)]
	if im.Module != "" {
		base = append(base, im.Module)
	}
	return strings.Join(base, ".")
}

// pyInherited returns the method a name of the file's class names through
// its method resolution order (Class.method, after the module's names in
// pyNames): the first class in it, after the class itself, that defines
// the method. hidden says why nothing can be told: a base the file does
// not declare (or binds more than once) comes first, and may define it.
func pyInherited(f *pydecl.File, names []string) (found []pydecl.Decl, from, hidden string) {
	for _, name := range names {
		owner, method, ok := cutLast(name, ".")
		if !ok || !pyLocalClass(f, owner) {
			continue
		}
		mro := pyMRO(f, owner, map[string]bool{})
		if len(mro) == 0 {
			continue
		}
		for _, c := range mro[1:] {
			if c == "object" {
				continue
			}
			if !pyLocalClass(f, c) {
				return nil, "", owner + " inherits from " + c + ", which the file does not declare (once), and which may define " + method
			}
			if defs := f.Lookup(c + "." + method); len(defs) > 0 {
				// The first class defining the name decides, a def or not.
				return slices.DeleteFunc(pyRuntimeDecls(defs), func(d pydecl.Decl) bool { return d.Kind != pydecl.KindMethod }), c, ""
			}
		}
	}
	return nil, "", ""
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// pyLocalClass reports whether the name c is bound once in the file, by a
// class statement, and no top-level import binds it.
func pyLocalClass(f *pydecl.File, c string) bool {
	decls := f.Lookup(c)
	if len(decls) != 1 || decls[0].Kind != pydecl.KindClass {
		return false
	}
	if !strings.Contains(c, ".") {
		for _, im := range f.Imports {
			if _, ok := im.Imported(c); ok && im.Line > decls[0].Line {
				return false // rebound after the class statement (or maybe, by a star)
			}
		}
	}
	return true
}

// pyBase resolves the base b of class owner as Python does when the class
// statement runs: in the scopes enclosing it (a class nested in a class
// or function sees the names its enclosing body bound), then at module
// level. A name no scope binds stands for itself.
func pyBase(f *pydecl.File, owner, b string) string {
	scope, _, _ := cutLast(owner, ".")
	for scope != owner && scope != "" {
		if len(f.Lookup(scope+"."+b)) > 0 {
			return scope + "." + b
		}
		next, _, ok := cutLast(scope, ".")
		if !ok {
			break
		}
		scope = next
	}
	return b
}

// pyMRO is class c's C3 linearization, over the file's classes by their
// qualified names; a base the file does not declare (or binds more than
// once, or an expression) stands for itself, its own bases unknown. nil
// when C3 fails (Python would refuse the class) or the bases loop.
func pyMRO(f *pydecl.File, c string, visiting map[string]bool) []string {
	if !pyLocalClass(f, c) {
		return []string{c}
	}
	if visiting[c] {
		return nil
	}
	visiting[c] = true
	defer delete(visiting, c)
	var seqs [][]string
	var bases []string
	for _, b := range f.Lookup(c)[0].Bases {
		if b == "" {
			b = "<expression>"
		} else {
			b = pyBase(f, c, b)
		}
		l := pyMRO(f, b, visiting)
		if l == nil {
			return nil
		}
		seqs, bases = append(seqs, l), append(bases, b)
	}
	return c3(c, seqs, bases)
}

// c3 merges the linearizations of a class's bases (seqs) and the bases
// themselves, in order, after the class head: nil when no order exists.
func c3[T comparable](head T, seqs [][]T, bases []T) []T {
	seqs = append(seqs, bases)
	out := []T{head}
	for {
		seqs = slices.DeleteFunc(seqs, func(s []T) bool { return len(s) == 0 })
		if len(seqs) == 0 {
			return out
		}
		var next T
		found := false
		for _, s := range seqs {
			cand := s[0]
			if !slices.ContainsFunc(seqs, func(t []T) bool { return slices.Contains(t[1:], cand) }) {
				next, found = cand, true
				break
			}
		}
		if !found {
			return nil
		}
		out = append(out, next)
		for i, s := range seqs {
			if s[0] == next {
				seqs[i] = s[1:]
			}
		}
	}
}

// pyClassRef is a class by its module and qualified name; mod "" for a
// class the source does not place (its name as written).
type pyClassRef struct{ mod, name string }

// maxMRO bounds the classes a linearization across modules visits.
const maxMRO = 32

// pyInheritedAcross finds a method the subject names through a class of
// another module of the repository (pkg.mod.Class.method) that inherits
// it: the class's method resolution order across the modules its bases
// are imported from. It returns the method's declarations when the
// class defining it first lies in rel's module (else nothing: the
// proposal cites another file), or why the source cannot tell.
func (val *validator) pyInheritedAcross(s Subject, rel string) (found []pydecl.Decl, from, hidden string) {
	parts := strings.Split(strings.TrimSuffix(strings.TrimSpace(s.Name), "()"), ".")
	target := pyModulePath(rel)
	for k := len(parts) - 2; k >= 1; k-- {
		mod, cls, method := strings.Join(parts[:k], "."), strings.Join(parts[k:len(parts)-1], "."), parts[len(parts)-1]
		if mod == target {
			continue
		}
		f, _ := val.pyModuleFile(mod)
		if f == nil || !pyLocalClass(f, cls) || len(f.Lookup(cls+"."+method)) > 0 {
			continue
		}
		budget := maxMRO
		mro := val.pyMROAcross(pyClassRef{mod, cls}, map[pyClassRef]bool{}, &budget)
		for _, c := range mro[min(1, len(mro)):] {
			if c.mod == "" {
				if c.name == "object" {
					continue
				}
				return nil, "", cls + " inherits from " + c.name + ", which Needle cannot place in the repository, and which may define " + method
			}
			cf, _ := val.pyModuleFile(c.mod)
			if defs := cf.Lookup(c.name + "." + method); len(defs) > 0 {
				if c.mod != target {
					return nil, "", ""
				}
				return slices.DeleteFunc(pyRuntimeDecls(defs), func(d pydecl.Decl) bool { return d.Kind != pydecl.KindMethod }), c.mod + "." + c.name, ""
			}
		}
	}
	return nil, "", ""
}

// pyMROAcross is c's C3 linearization across the repository's modules:
// a base bound in c's module by a class statement, or by an import of a
// class another module declares, is followed there; anything else stands
// for itself (mod ""). nil when C3 fails, the bases loop, or budget runs
// out.
func (val *validator) pyMROAcross(c pyClassRef, visiting map[pyClassRef]bool, budget *int) []pyClassRef {
	if c.mod == "" {
		return []pyClassRef{c}
	}
	if visiting[c] || *budget <= 0 {
		return nil
	}
	*budget--
	visiting[c] = true
	defer delete(visiting, c)
	f, rel := val.pyModuleFile(c.mod)
	var seqs [][]pyClassRef
	var bases []pyClassRef
	for _, b := range f.Lookup(c.name)[0].Bases {
		ref := val.pyResolveBase(f, rel, c, b)
		l := val.pyMROAcross(ref, visiting, budget)
		if l == nil {
			return nil
		}
		seqs, bases = append(seqs, l), append(bases, ref)
	}
	return c3(c, seqs, bases)
}

// pyResolveBase places base b of class c (declared in file f, rel, of
// c.mod):
// a class of the same file (pyBase's scopes), or a class another module
// declares that f imports by name (its last binding, unconditional);
// else unplaced.
func (val *validator) pyResolveBase(f *pydecl.File, rel string, c pyClassRef, b string) pyClassRef {
	if b == "" {
		return pyClassRef{name: "<expression>"}
	}
	if name := pyBase(f, c.name, b); pyLocalClass(f, name) {
		return pyClassRef{c.mod, name}
	}
	if strings.Contains(b, ".") || len(f.Lookup(b)) > 0 {
		return pyClassRef{name: b}
	}
	for i := len(f.Imports) - 1; i >= 0; i-- {
		im := f.Imports[i]
		imported, ok := im.Imported(b)
		if !ok {
			continue
		}
		src := pyImportedModule(c.mod, rel, im)
		if imported == "*" || im.Cond || src == "" {
			return pyClassRef{name: b}
		}
		if sf, _ := val.pyModuleFile(src); sf != nil && pyLocalClass(sf, imported) {
			return pyClassRef{src, imported}
		}
		return pyClassRef{name: b}
	}
	return pyClassRef{name: b}
}
