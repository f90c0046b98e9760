package product

import (
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/pydecl"
)

// Names a Python symbol has outside the file that declares it, as Python
// resolves them and as users write them:
//
//   - a package's re-export: markdown.markdown is the function of
//     markdown/core.py when markdown/__init__.py does `from .core import
//     markdown` (as, or *; through packages in between too);
//   - an inherited method: TextElement.astext is Element.astext when
//     TextElement's method resolution order (C3, over the file's own
//     classes) reaches Element first among the classes defining astext.
//
// Both are read from the source, not by importing it, and the
// certificate says so (static). A base class the file does not declare
// hides what it defines: the proposal is then undecided.

// maxReexportHops bounds the packages a re-export is followed through.
const maxReexportHops = 4

// pyModulePath is the dotted module of a repository file: pkg/mod.py is
// pkg.mod, pkg/__init__.py is pkg.
func pyModulePath(rel string) string {
	m := strings.TrimSuffix(strings.TrimSuffix(rel, ".py"), "/__init__")
	return strings.ReplaceAll(m, "/", ".")
}

// pyReexported returns the names in rel's module that the subject names
// through a package re-exporting them, and the package __init__.py files
// whose imports said so.
func (val *validator) pyReexported(s Subject, rel string) (names, via []string) {
	mod := pyModulePath(rel)
	parts := strings.Split(strings.TrimSuffix(strings.TrimSpace(s.Name), "()"), ".")
	for k := len(parts) - 1; k >= 1; k-- {
		head := strings.Join(parts[:k], ".")
		if !strings.HasPrefix(mod, head+".") {
			continue
		}
		if name, files, ok := val.pyFollowReexport(head, parts[k:], mod, maxReexportHops); ok {
			names, via = append(names, name), append(via, files...)
		}
	}
	return names, via
}

// pyFollowReexport follows tail (a name and its attributes) from package
// pkg's __init__.py to the module mod, through the packages between.
func (val *validator) pyFollowReexport(pkg string, tail []string, mod string, hops int) (string, []string, bool) {
	if hops == 0 {
		return "", nil, false
	}
	init := strings.ReplaceAll(pkg, ".", "/") + "/__init__.py"
	src, _, err := val.repo.ReadFileMax(init, maxCitedFileBytes)
	if err != nil {
		return "", nil, false
	}
	r := val.vs.pyDecls(val.ctx, src)
	if r.file == nil || r.fallback != "" || r.undecided != "" || r.file.SyntaxError != nil {
		return "", nil, false
	}
	for _, im := range r.file.Imports {
		from := pyImportedModule(pkg, im)
		if from != mod && !strings.HasPrefix(mod, from+".") {
			continue
		}
		for _, n := range im.Names {
			bound := orElse(n[1], n[0])
			if n[0] == "*" && !strings.HasPrefix(tail[0], "_") {
				n[0], bound = tail[0], tail[0]
			}
			if bound != tail[0] {
				continue
			}
			name := strings.Join(append([]string{n[0]}, tail[1:]...), ".")
			if from == mod {
				return name, []string{init}, true
			}
			if got, files, ok := val.pyFollowReexport(from, strings.Split(name, "."), mod, hops-1); ok {
				return got, append([]string{init}, files...), true
			}
		}
	}
	return "", nil, false
}

// orElse returns a unless it is empty, else b.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pyImportedModule is the absolute module an import of package pkg's
// __init__.py reads from ("" when a relative import climbs above the
// repository).
func pyImportedModule(pkg string, im pydecl.Import) string {
	if im.Level == 0 {
		return im.Module
	}
	base := strings.Split(pkg, ".")
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
// the method. hidden names a base the file does not declare that comes
// first, which may define it: nothing is then found.
func pyInherited(f *pydecl.File, names []string) (found []pydecl.Decl, from, hidden string) {
	for _, name := range names {
		owner, method, ok := cutLast(name, ".")
		if !ok || len(f.Lookup(owner)) == 0 {
			continue
		}
		classes := slices.DeleteFunc(f.Lookup(owner), func(d pydecl.Decl) bool { return d.Kind != pydecl.KindClass })
		if len(classes) != 1 {
			continue
		}
		mro := pyMRO(f, owner, map[string]bool{})
		if len(mro) == 0 {
			continue
		}
		for _, c := range mro[1:] {
			if !pyLocalClass(f, c) {
				if c == "object" {
					continue
				}
				return nil, "", c
			}
			if defs := f.Lookup(c + "." + method); len(defs) > 0 {
				// The first class defining the name decides, a def or not.
				return slices.DeleteFunc(defs, func(d pydecl.Decl) bool { return d.Kind != pydecl.KindMethod }), c, ""
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

// pyLocalClass reports whether the file declares one class named c.
func pyLocalClass(f *pydecl.File, c string) bool {
	n := 0
	for _, d := range f.Lookup(c) {
		if d.Kind == pydecl.KindClass {
			n++
		}
	}
	return n == 1
}

// pyMRO is class c's C3 linearization, over the file's classes by their
// qualified names; a base the file does not declare (or declares twice,
// or an expression) stands for itself, its own bases unknown. nil when
// C3 fails (Python would refuse the class) or the bases loop.
func pyMRO(f *pydecl.File, c string, visiting map[string]bool) []string {
	if !pyLocalClass(f, c) {
		return []string{c}
	}
	if visiting[c] {
		return nil
	}
	visiting[c] = true
	defer delete(visiting, c)
	var d pydecl.Decl
	for _, x := range f.Lookup(c) {
		if x.Kind == pydecl.KindClass {
			d = x
		}
	}
	var seqs [][]string
	var bases []string
	for _, b := range d.Bases {
		if b == "" {
			b = "<expression>"
		}
		// A base named in the class's own scope resolves at module level
		// in the file (nested classes by their qualified name are rare).
		l := pyMRO(f, b, visiting)
		if l == nil {
			return nil
		}
		seqs, bases = append(seqs, l), append(bases, b)
	}
	seqs = append(seqs, bases)
	out := []string{c}
	for {
		seqs = slices.DeleteFunc(seqs, func(s []string) bool { return len(s) == 0 })
		if len(seqs) == 0 {
			return out
		}
		var next string
		for _, s := range seqs {
			head := s[0]
			if !slices.ContainsFunc(seqs, func(t []string) bool { return slices.Contains(t[1:], head) }) {
				next = head
				break
			}
		}
		if next == "" {
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
