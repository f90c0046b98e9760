package bench

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Computing the intervention truth of one module version (itruth.go says
// what each intervention is): at corpus generation, for what the corpus's
// answers cite at any of the module's versions.

// truthPlan is what to compute for one module version.
type truthPlan struct {
	// symbols: symbol subject → keys (path#name) of declarations to delete.
	symbols map[string]map[string]bool
	// flags: cli_option subject → the files whose sites to rename, and the
	// files that define it (where to look for a program that parses it).
	flags map[string]*flagPlan
	// reach: subject (kind:name) → cited tests ("dir\x00TestX/sub").
	reach map[string]map[string]bool
	// testFiles: the cited _test.go files.
	testFiles map[string]bool
	// funcs: keys of the functions to instrument for flows.
	funcs map[string]bool
	// scenarios: every scenario a flow names, as written.
	scenarios map[string]ScenarioSpec
}

type flagPlan struct {
	files map[string]bool
	hints map[string]bool
}

func newTruthPlan() *truthPlan {
	return &truthPlan{symbols: map[string]map[string]bool{}, flags: map[string]*flagPlan{}, reach: map[string]map[string]bool{},
		testFiles: map[string]bool{}, funcs: map[string]bool{}, scenarios: map[string]ScenarioSpec{}}
}

func (p *truthPlan) symbol(name, key string) {
	if p.symbols[name] == nil {
		p.symbols[name] = map[string]bool{}
	}
	if key != "" {
		p.symbols[name][key] = true
	}
}

func (p *truthPlan) flag(name, file, hint string) {
	fp := p.flags[name]
	if fp == nil {
		fp = &flagPlan{files: map[string]bool{}, hints: map[string]bool{}}
		p.flags[name] = fp
	}
	if file != "" {
		fp.files[file] = true
	}
	if hint != "" {
		fp.hints[hint] = true
		fp.files[hint] = true
	}
}

func (p *truthPlan) test(subj subject, dir, name string) {
	k := subj.Kind + ":" + subj.Name
	if p.reach[k] == nil {
		p.reach[k] = map[string]bool{}
	}
	p.reach[k][dir+"\x00"+name] = true
}

// computation is one module version's truth being computed.
type computation struct {
	lab    *lab
	module string
	t      tree
	cov    *Coverage
	plan   *truthPlan
	units  map[string][]unit
	d      *TruthData
	index  map[string]int        // path:head:name → index in d.Units
	sites  map[string][]siteEdit // cli_option subject → its true sites
	report func(string)
}

// siteEdit is a renamed site: the edit that renames it.
type siteEdit struct {
	path       string
	start, end int
	repl       string
}

// computeTruth runs the interventions of plan on module@version.
func computeTruth(ctx context.Context, opts coverageOptions, module, version string, t tree, cov *Coverage, plan *truthPlan) (*TruthData, error) {
	l, err := newLab(ctx, opts, module, t)
	if err != nil {
		return nil, err
	}
	defer l.close()
	goVersion, err := goValue(ctx, "GOVERSION")
	if err != nil {
		return nil, err
	}
	c := &computation{lab: l, module: module, t: t, cov: cov, plan: plan, units: treeUnits(t), index: map[string]int{}, sites: map[string][]siteEdit{},
		d: &TruthData{Format: TruthFormat, Module: module, Version: version, GoVersion: goVersion, Sandbox: opts.sandbox.String(),
			Units: []unit{}, Locations: []LocationCase{}, Probes: []FlagProbe{}, Sites: []FlagSite{}, TestFiles: []TestFileCase{}, Reach: []ReachCase{},
			Functions: []int{}, Scenarios: []ScenarioSpec{}, Runs: []TraceRun{}},
		report: func(s string) {
			if opts.progress != nil {
				opts.progress(fmt.Sprintf("truth %s@%s: %s", module, version, s))
			}
		}}
	for _, step := range []func() error{c.symbols, c.flags, c.testFiles, c.reach, c.flows} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("truth of %s@%s: %w", module, version, err)
		}
	}
	return c.d, l.reset()
}

// unitID returns the index of u in the data's units, adding it.
func (c *computation) unitID(u unit) int {
	k := fmt.Sprintf("%s:%d:%s", u.Path, u.Head, u.Name)
	if i, ok := c.index[k]; ok {
		return i
	}
	c.index[k] = len(c.d.Units)
	c.d.Units = append(c.d.Units, u)
	return c.index[k]
}

// byKey returns the units of key path#name.
func (c *computation) byKey(key string) []unit {
	p, name, _ := strings.Cut(key, "#")
	var out []unit
	for _, u := range c.units[p] {
		if u.Name == name {
			out = append(out, u)
		}
	}
	return out
}

// named returns the functions and methods named name, anywhere.
func (c *computation) named(name string) []unit {
	var out []unit
	for _, p := range slices.Sorted(mapKeys(c.units)) {
		for _, u := range c.units[p] {
			if u.Name == name && (u.Kind == "func" || u.Kind == "method") {
				out = append(out, u)
			}
		}
	}
	return out
}

// pkgName is the package a directory's non-test Go files declare.
func (c *computation) pkgName(dir string) string {
	for _, rel := range slices.Sorted(mapKeys(c.t)) {
		if path.Dir(rel) == dir && !skipFile(rel) && !strings.HasSuffix(rel, "_test.go") {
			if p := packageClause(c.t[rel]); p != "" {
				return p
			}
		}
	}
	return ""
}

// refName is the file a reference probe is written to.
const refName = "needlebench_ref.go"

// reference is a file of package pkg that refers to the symbol name, and
// the line of the reference to its last name.
func reference(pkg, name string) ([]byte, int) {
	if typ, m, ok := strings.Cut(name, "."); ok {
		return fmt.Appendf(nil, "package %s\n\nfunc _() {\n\tvar x %s\n\t_ = x.%s\n}\n", pkg, typ, m), 5
	}
	return fmt.Appendf(nil, "package %s\n\nvar _ = %s\n", pkg, name), 3
}

// symbols deletes each planned declaration and compiles a reference to
// the subject.
func (c *computation) symbols() error {
	for _, name := range slices.Sorted(mapKeys(c.plan.symbols)) {
		c.report("locations of " + name)
		subj := "symbol:" + name
		var cands []unit
		for _, k := range slices.Sorted(mapKeys(c.plan.symbols[name])) {
			cands = append(cands, c.byKey(k)...)
		}
		cands = append(cands, c.named(name)...)
		cands = dedupeUnits(cands)
		dirs, refs, err := c.compilingReferences(name)
		if err != nil {
			return err
		}
		for _, u := range cands {
			lc := LocationCase{Subject: subj, Unit: c.unitID(u)}
			if len(dirs) == 0 {
				lc.Verdict, lc.Why = verdictUnjudged, "no reference to "+name+" compiles in the module as it is"
				c.d.Locations = append(c.d.Locations, lc)
				continue
			}
			if err := c.judgeDeletion(&lc, name, u, dirs, refs); err != nil {
				return err
			}
			c.d.Locations = append(c.d.Locations, lc)
		}
	}
	return c.lab.reset()
}

// compilingReferences returns the package directories, among those that
// declare name, where a reference to it compiles as the module is, and
// the reference files written there.
func (c *computation) compilingReferences(name string) ([]string, edit, error) {
	var dirs []string
	refs := edit{}
	for _, u := range c.named(name) {
		dir := path.Dir(u.Path)
		if slices.Contains(dirs, dir) {
			continue
		}
		src, _ := reference(c.pkgName(dir), name)
		if err := c.lab.apply(edit{path.Join(dir, refName): src}); err != nil {
			return nil, nil, err
		}
		if _, ok := c.lab.build(dir); ok {
			dirs = append(dirs, dir)
			refs[path.Join(dir, refName)] = src
		}
	}
	return dirs, refs, nil
}

// judgeDeletion sets lc's verdict on u as name's location: true when,
// with u deleted, a reference to name no longer compiles in one of dirs
// (or u is its type's own method of that name).
func (c *computation) judgeDeletion(lc *LocationCase, name string, u unit, dirs []string, refs edit) error {
	e := edit{u.Path: blankLines(c.t[u.Path], u.Doc, u.End)}
	for k, v := range refs {
		e[k] = v
	}
	if err := c.lab.apply(e); err != nil {
		return err
	}
	lc.Verdict, lc.Why = verdictFalse, fmt.Sprintf("with %s (%s:%d-%d) deleted, a reference to %s still compiles", u.Name, u.Path, u.Doc, u.End, name)
	for _, dir := range dirs {
		out, ok := c.lab.build(dir)
		_, line := reference("", name)
		switch {
		case ok:
		case strings.Contains(out, fmt.Sprintf("%s:%d:", refName, line)):
			lc.Verdict, lc.Why = verdictTrue, fmt.Sprintf("with %s (%s:%d-%d) deleted, the reference to %s no longer compiles", u.Name, u.Path, u.Doc, u.End, name)
		case strings.Contains(out, "syntax error"):
			lc.Verdict, lc.Why = verdictUnjudged, fmt.Sprintf("deleting %s (%s:%d-%d) leaves a file that does not parse", u.Name, u.Path, u.Doc, u.End)
		}
		if lc.Verdict != verdictFalse {
			break
		}
	}
	if lc.Verdict == verdictFalse && u.Kind == "method" && u.Name == name && len(dirs) > 0 {
		// The reference may still compile through a method of the
		// same name promoted from an embedded field (pkg/errors'
		// fundamental embeds *stack, and both have Format).
		own, why, err := c.ownMethod(u)
		if err != nil {
			return err
		}
		if own {
			lc.Verdict, lc.Why = verdictTrue, why
		}
	}
	return nil
}

// ownName is the name ownMethod gives the method it renames.
const ownName = "needlebenchOwn"

// ownMethod reports whether the method u is its receiver type's own: with
// its name renamed, the new name selects on a value of the type, and not on
// a value of a type defined from it (which keeps the methods promoted from
// embedded fields, not the type's own). The compiler decides.
func (c *computation) ownMethod(u unit) (bool, string, error) {
	typ, m, _ := strings.Cut(u.Name, ".")
	src := c.t[u.Path]
	off := methodNameOffset(src, u)
	if off < 0 {
		return false, "", nil
	}
	dir := path.Dir(u.Path)
	ref := fmt.Appendf(nil, "package %s\n\ntype needlebenchDefined %s\n\nfunc _() {\n\tvar x %s\n\t_ = x.%s\n}\n\nfunc _() {\n\tvar p needlebenchDefined\n\t_ = p.%s\n}\n",
		c.pkgName(dir), typ, typ, ownName, ownName)
	e := edit{u.Path: slices.Concat(src[:off], []byte(ownName), src[off+len(m):]), path.Join(dir, refName): ref}
	if err := c.lab.apply(e); err != nil {
		return false, "", err
	}
	out, ok := c.lab.build(dir)
	if ok || strings.Contains(out, refName+":7:") || !strings.Contains(out, refName+":12:") {
		return false, "", nil
	}
	return true, fmt.Sprintf("with %s (%s:%d-%d) deleted a reference to %s still compiles through a promoted method; renamed, the new name selects on %s and not on a type defined from it (which keeps only promoted methods): it is %s's own method",
		u.Name, u.Path, u.Doc, u.End, u.Name, typ, typ), nil
}

// methodNameOffset is the byte offset of the name of the method u in src,
// or -1.
func methodNameOffset(src []byte, u unit) int {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return -1
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && funcName(fd) == u.Name && fset.Position(fd.Name.Pos()).Line == u.Head {
			return fset.Position(fd.Name.Pos()).Offset
		}
	}
	return -1
}

func dedupeUnits(us []unit) []unit {
	var out []unit
	for _, u := range us {
		if !slices.ContainsFunc(out, func(x unit) bool { return x.Path == u.Path && x.Head == u.Head && x.Name == u.Name }) {
			out = append(out, u)
		}
	}
	return out
}

// occurrence is an expression of a file whose value is a flag's name.
type occurrence struct {
	start, end int // byte offsets
	line       int
	dashes     string // the dashes the literal spells before the name
}

// nameOccurrences finds, by syntax, the expressions of src whose value is
// name ("-name", "--name" too): string literals, and identifiers of
// constants the package declares with such a literal. Import paths,
// struct tags and the constants' own names are not expressions.
func nameOccurrences(src []byte, consts map[string]string, name string) []occurrence {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	value := func(v string) (string, bool) {
		for _, d := range []string{"", "-", "--"} {
			if v == d+name {
				return d, true
			}
		}
		return "", false
	}
	skip := map[ast.Node]bool{}
	var out []occurrence
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			if n.Tag != nil {
				skip[n.Tag] = true
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || skip[n] {
				return true
			}
			v, err := strconv.Unquote(n.Value)
			if d, ok := value(v); err == nil && ok {
				out = append(out, occurrence{start: fset.Position(n.Pos()).Offset, end: fset.Position(n.End()).Offset, line: fset.Position(n.Pos()).Line, dashes: d})
			}
		case *ast.Ident:
			if skip[n] {
				return true
			}
			if d, ok := value(consts[n.Name]); ok && consts[n.Name] != "" {
				out = append(out, occurrence{start: fset.Position(n.Pos()).Offset, end: fset.Position(n.End()).Offset, line: fset.Position(n.Pos()).Line, dashes: d})
			}
		}
		return true
	})
	return out
}

// stringConsts are the constants a package directory declares with a
// string literal, by name.
func (c *computation) stringConsts(dir string) map[string]string {
	out := map[string]string{}
	for _, rel := range slices.Sorted(mapKeys(c.t)) {
		if path.Dir(rel) != dir || skipFile(rel) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", c.t[rel], parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if v, err := strconv.Unquote(lit.Value); err == nil {
								out[id.Name] = v
							}
						}
					}
				}
			}
		}
	}
	return out
}

// flagProgram is a program that recognises a flag: after each of the
// argument prefixes (the path to a subcommand) under which it does.
type flagProgram struct {
	program  string
	prefixes [][]string
}

// dashesOf is the dashes a cli_option subject is written with.
func dashesOf(name string) string { return name[:len(name)-len(flagName(name))] }

// programEdit is the edit that adds a program spec's driver, if any.
func (c *computation) programEdit(program string, e edit) edit {
	if src, ok := driverSource(c.module, program); ok {
		e[path.Join(driverDir, "main.go")] = []byte(src)
	}
	return e
}

// behaviour runs a program with prefix and arg: its exit status and
// output.
func (c *computation) behaviour(bin string, prefix []string, arg string) (string, error) {
	code, out, _, err := c.lab.runProgram(bin, append(slices.Clone(prefix), arg))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("exit %d\n%s", code, out), nil
}

// unknownFlag is a flag no program defines.
const unknownFlag = "needleunknownflag"

// refusal is what a program does with a flag named bare that it does not
// define: what it did with unknownFlag, that name replaced.
func refusal(unknown, bare string) string { return strings.ReplaceAll(unknown, unknownFlag, bare) }

// findProgram returns the first program (and argument prefix) that
// recognises the flag name as the module is.
func (c *computation) findProgram(name string, hints []string) (flagProgram, string) {
	var programs []string
	for _, h := range hints {
		dir := path.Dir(h)
		if c.pkgName(dir) == "main" {
			programs = append(programs, "main:"+dir)
		}
	}
	if _, ok := cliDrivers[c.module]; ok {
		programs = append(programs, "driver")
	}
	for _, h := range hints {
		if dir := path.Dir(h); c.pkgName(dir) != "main" && !slices.Contains(programs, "commandline:"+dir) {
			programs = append(programs, "commandline:"+dir)
		}
	}
	why := "no program parses the module's flags"
	d := dashesOf(name)
	for _, p := range programs {
		found := flagProgram{program: p}
		if err := c.lab.apply(c.programEdit(p, edit{})); err != nil {
			return flagProgram{}, err.Error()
		}
		bin, err := c.lab.buildBinary(programDir(p))
		if err != nil {
			why = fmt.Sprintf("%s does not build: %v", p, err)
			continue
		}
		prefixes := [][]string{nil}
		if p == "driver" {
			prefixes = cliDrivers[c.module].prefixes
		}
		for _, pre := range prefixes {
			a, errA := c.behaviour(bin, pre, d+unknownFlag)
			b, errB := c.behaviour(bin, pre, d+"needleotherflag")
			if errA != nil || errB != nil || refusal(a, "needleotherflag") != b {
				why = fmt.Sprintf("%s %s behaves differently with two unknown flags", p, strings.Join(pre, " "))
				continue
			}
			got, err := c.behaviour(bin, pre, name)
			if err == nil && got != refusal(a, flagName(name)) {
				found.prefixes = append(found.prefixes, pre)
				continue
			}
			why = fmt.Sprintf("%s %s does not recognise %s", p, strings.Join(pre, " "), name)
		}
		if len(found.prefixes) > 0 {
			return found, ""
		}
	}
	return flagProgram{}, why
}

// flags renames each site of each planned flag.
func (c *computation) flags() error {
	for _, name := range slices.Sorted(mapKeys(c.plan.flags)) {
		c.report("sites of " + name)
		subj := "cli_option:" + name
		fp := c.plan.flags[name]
		probe := FlagProbe{Subject: subj, Files: []string{}}
		for _, f := range slices.Sorted(mapKeys(fp.files)) {
			if _, ok := c.t[f]; ok && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
				probe.Files = append(probe.Files, f)
			}
		}
		prog, why := c.findProgram(name, slices.Sorted(mapKeys(fp.hints)))
		probe.Program, probe.Why = prog.program, why
		if len(prog.prefixes) > 0 {
			probe.Args, probe.More = prog.prefixes[0], prog.prefixes[1:]
		}
		c.d.Probes = append(c.d.Probes, probe)
		if prog.program == "" {
			continue
		}
		for _, f := range probe.Files {
			occs := nameOccurrences(c.t[f], c.stringConsts(path.Dir(f)), flagName(name))
			for i, o := range occs {
				if err := c.renameSite(subj, name, f, i, o, prog); err != nil {
					return err
				}
			}
		}
	}
	return c.lab.reset()
}

// renameSite renames the i-th occurrence o of flag name in file f to a
// run-time value, builds prog's program so, and records the site's
// verdict: whether the program still recognises the flag there.
func (c *computation) renameSite(subj, name, f string, i int, o occurrence, prog flagProgram) error {
	d := dashesOf(name)
	site := FlagSite{Subject: subj, Path: f, Line: o.line, Unit: -1}
	if u, ok := unitHolding(c.units[f], o.line); ok {
		site.Unit = c.unitID(u)
	}
	se := siteEdit{path: f, start: o.start, end: o.end, repl: fmt.Sprintf("needlebenchFlagName(%d, %q)", i, o.dashes)}
	src := slices.Concat(c.t[f][:o.start], []byte(se.repl), c.t[f][o.end:])
	if err := c.lab.apply(c.programEdit(prog.program, c.lab.withHook(edit{f: src}))); err != nil {
		return err
	}
	bin, err := c.lab.buildBinary(programDir(prog.program))
	if err != nil {
		site.Verdict, site.Why = verdictFalse, fmt.Sprintf("the name at %s:%d cannot take a run-time value (the program does not build so)", f, o.line)
		c.d.Sites = append(c.d.Sites, site)
		return nil
	}
	// The site renames the flag when, after the first prefix that
	// recognised it, the program no longer recognises it or
	// recognises the new name; after another (completion zsh,
	// when each subcommand defines its own), when it no longer
	// recognises it and recognises the new name: the flag moved
	// to the new name there (a prefix whose handling merely
	// changes, as __complete's completions do, is not enough).
	site.Verdict, site.Why = verdictFalse, fmt.Sprintf("renamed at %s:%d, the program still recognises %s and not the new name", f, o.line, name)
	for i, pre := range prog.prefixes {
		orig, err1 := c.behaviour(bin, pre, name)
		mut, err2 := c.behaviour(bin, pre, d+mutantFlag)
		unknown, err3 := c.behaviour(bin, pre, d+unknownFlag)
		gone, moved := orig == refusal(unknown, flagName(name)), mut != refusal(unknown, mutantFlag)
		switch {
		case err1 != nil || err2 != nil || err3 != nil:
			site.Verdict, site.Why = verdictUnjudged, fmt.Sprintf("the program did not finish: %v %v %v", err1, err2, err3)
			continue
		case (i == 0 && (gone || moved)) || (gone && moved):
			site.Verdict, site.Why = verdictTrue, fmt.Sprintf("renamed at %s:%d, %s is no longer recognised or the new name is (%s)", f, o.line, name, strings.Join(append(slices.Clone(pre), name), " "))
			c.sites[subj] = append(c.sites[subj], se)
		}
		if site.Verdict == verdictTrue {
			break
		}
	}
	c.d.Sites = append(c.d.Sites, site)
	return nil
}

// unitHolding is the innermost unit whose lines hold line.
func unitHolding(units []unit, line int) (unit, bool) {
	var best unit
	found := false
	for _, u := range units {
		if u.Doc <= line && line <= u.End && (!found || u.End-u.Doc < best.End-best.Doc) {
			best, found = u, true
		}
	}
	return best, found
}

// breakEdit is the edit that breaks a subject, and what it breaks.
func (c *computation) breakEdit(subj string) (edit, string) { return c.breakWith(subj, breakBodies) }

// breakWith is breakEdit with the bodies of a symbol or a file broken by
// mutate (breakBodies: a panic; haltBodies: the process exits).
func (c *computation) breakWith(subj string, mutate func([]byte, []unit, func(unit) int) []byte) (edit, string) {
	kind, name, _ := strings.Cut(subj, ":")
	e := edit{}
	byFile := map[string][]unit{}
	switch kind {
	case "symbol":
		for _, u := range c.named(name) {
			if u.lbrace >= 0 {
				byFile[u.Path] = append(byFile[u.Path], u)
			}
		}
	case "file":
		for _, u := range c.units[name] {
			if u.lbrace >= 0 {
				byFile[name] = append(byFile[name], u)
			}
		}
	case "cli_option":
		sites := map[string][]siteEdit{}
		for _, s := range c.sites[subj] {
			sites[s.path] = append(sites[s.path], s)
		}
		for f, ss := range sites {
			slices.SortFunc(ss, func(a, b siteEdit) int { return b.start - a.start })
			src := c.t[f]
			for _, s := range ss {
				src = slices.Concat(src[:s.start], []byte(s.repl), src[s.end:])
			}
			e[f] = src
		}
		if len(e) == 0 {
			return nil, "no site renames " + name
		}
		return c.lab.withHook(e), ""
	}
	if len(byFile) == 0 {
		return nil, "no body of " + name + " to break"
	}
	n := 0
	for f, us := range byFile {
		e[f] = mutate(c.t[f], us, func(unit) int { n++; return n })
	}
	return c.lab.withHook(e), ""
}

// reach runs each cited test with its subject broken.
func (c *computation) reach() error {
	outcomes := c.outcomes()
	for _, subj := range slices.Sorted(mapKeys(c.plan.reach)) {
		c.report("tests of " + subj)
		e, why := c.breakEdit(subj)
		byDir := map[string][]string{}
		for _, k := range slices.Sorted(mapKeys(c.plan.reach[subj])) {
			dir, test, _ := strings.Cut(k, "\x00")
			if outcomes[dir+" "+test] == "pass" {
				byDir[dir] = append(byDir[dir], test)
			}
		}
		for _, dir := range slices.Sorted(mapKeys(byDir)) {
			tests := byDir[dir]
			add := func(test, verdict, why string) {
				c.d.Reach = append(c.d.Reach, ReachCase{Subject: subj, Dir: dir, Test: test, Verdict: verdict, Why: why})
			}
			if e == nil {
				for _, t := range tests {
					add(t, verdictUnjudged, why)
				}
				continue
			}
			if err := c.lab.apply(e); err != nil {
				return err
			}
			bin, err := c.lab.testBinary(dir)
			if err != nil {
				for _, t := range tests {
					add(t, verdictUnjudged, "the tests of "+dir+" do not build with "+subj+" broken: "+tail([]byte(err.Error()), 300))
				}
				continue
			}
			res, err := c.lab.runTestsOf(dir, bin, tests)
			if err != nil {
				return err
			}
			var survived []string
			for _, r := range res {
				switch fired := len(r.fired) > 0; {
				case fired && r.outcome != "pass":
					add(r.name, verdictTrue, fmt.Sprintf("%s %ss with %s broken", r.name, r.outcome, subj))
				case !fired && r.outcome == "pass":
					add(r.name, verdictFalse, fmt.Sprintf("%s never runs the broken code of %s", r.name, subj))
				case fired && !strings.HasPrefix(subj, "cli_option:"):
					survived = append(survived, r.name)
				case fired:
					add(r.name, verdictUnjudged, fmt.Sprintf("%s runs the renamed site of %s and still passes (the mutant survived)", r.name, subj))
				default:
					add(r.name, verdictUnjudged, fmt.Sprintf("%s %ss with %s broken without running the broken code", r.name, r.outcome, subj))
				}
			}
			if err := c.halted(subj, dir, survived, add); err != nil {
				return err
			}
		}
	}
	return c.lab.reset()
}

// halted runs again the tests that ran the panicking bodies of subj and
// still passed (a recover swallowed the panic: text/template's, a test's
// own), with bodies that stop the process instead, which nothing recovers:
// a test that then fails cannot complete without running the subject's
// code. One that still passes stays unjudged.
func (c *computation) halted(subj, dir string, tests []string, add func(test, verdict, why string)) error {
	if len(tests) == 0 {
		return nil
	}
	survived := func(test, why string) {
		add(test, verdictUnjudged, fmt.Sprintf("%s runs the broken code of %s and still passes (the mutant survived)%s", test, subj, why))
	}
	e, _ := c.breakWith(subj, haltBodies)
	if err := c.lab.apply(e); err != nil {
		return err
	}
	bin, err := c.lab.testBinary(dir)
	if err != nil {
		for _, t := range tests {
			survived(t, "; the halting mutant does not build")
		}
		return nil
	}
	res, err := c.lab.runTestsOf(dir, bin, tests)
	if err != nil {
		return err
	}
	for _, r := range res {
		if len(r.fired) > 0 && r.outcome != "pass" {
			add(r.name, verdictTrue, fmt.Sprintf("%s runs the broken code of %s: a panic there is recovered and the test passes, an exit stops it (%s)", r.name, subj, r.outcome))
		} else {
			survived(r.name, "; it passes even when that code exits")
		}
	}
	return nil
}

// notCompiled is the undefined name testFiles appends to a test file.
const notCompiled = "needlebenchNotCompiled"

// testFiles breaks each cited _test.go file with a reference to an
// undefined name and builds its package's test binary: the file is part of
// it when that build fails there; a file a build constraint leaves out
// changes nothing.
func (c *computation) testFiles() error {
	for _, f := range slices.Sorted(mapKeys(c.plan.testFiles)) {
		src, ok := c.t[f]
		if !ok {
			continue
		}
		c.report("test file " + f)
		tf := TestFileCase{Path: f}
		if err := c.lab.apply(edit{f: fmt.Appendf(slices.Clone(src), "\nvar _ = %s\n", notCompiled)}); err != nil {
			return err
		}
		_, err := c.lab.testBinary(path.Dir(f))
		switch {
		case err == nil:
			tf.Verdict, tf.Why = verdictFalse, fmt.Sprintf("the test binary of ./%s builds with %s broken: the build leaves the file out (a build constraint)", path.Dir(f), f)
		case strings.Contains(err.Error(), notCompiled):
			tf.Verdict, tf.Why = verdictTrue, fmt.Sprintf("the test binary of ./%s compiles %s", path.Dir(f), f)
		default:
			tf.Verdict, tf.Why = verdictUnjudged, fmt.Sprintf("the test binary of ./%s does not build with %s broken, for another reason: %s", path.Dir(f), f, tail([]byte(err.Error()), 300))
		}
		c.d.TestFiles = append(c.d.TestFiles, tf)
	}
	return c.lab.reset()
}

// outcomes are the unmutated outcomes of the coverage runs: "dir name" →
// pass, fail, skip, timeout or error.
func (c *computation) outcomes() map[string]string {
	out := map[string]string{}
	for _, p := range c.cov.Packages {
		for _, t := range p.Tests {
			out[p.Dir+" "+t.Name] = t.Outcome
		}
	}
	return out
}

// flows instruments the planned functions and records the entries of
// every test that can enter them and of every command scenario.
func (c *computation) flows() error {
	fns := c.plannedFunctions()
	ids := map[string]int{}
	keys := map[string]bool{}
	for i, u := range fns {
		c.d.Functions = append(c.d.Functions, c.unitID(u))
		ids[fmt.Sprintf("%s:%d", u.Path, u.lbrace)] = i
		keys[u.key()] = true
	}
	for _, s := range slices.Sorted(mapKeys(c.plan.scenarios)) {
		c.d.Scenarios = append(c.d.Scenarios, c.plan.scenarios[s])
	}
	if len(fns) == 0 {
		return nil
	}
	byFile := map[string][]unit{}
	for _, u := range fns {
		byFile[u.Path] = append(byFile[u.Path], u)
	}
	e := edit{}
	for f, us := range byFile {
		e[f] = instrument(c.t[f], us, func(u unit) int { return ids[fmt.Sprintf("%s:%d", u.Path, u.lbrace)] })
	}
	e = c.lab.withHook(e)
	if err := c.traceTests(e, keys); err != nil {
		return err
	}
	if err := c.traceScenarios(e); err != nil {
		return err
	}
	return c.lab.reset()
}

// plannedFunctions are the units of the planned functions that have a
// body to instrument, each once.
func (c *computation) plannedFunctions() []unit {
	var fns []unit
	for _, k := range slices.Sorted(mapKeys(c.plan.funcs)) {
		for _, u := range c.byKey(k) {
			if u.lbrace >= 0 {
				fns = append(fns, u)
			}
		}
	}
	return dedupeUnits(fns)
}

// traceTests runs, with the instrumentation e applied, the tests whose
// coverage entered an instrumented function (keys) and those a scenario
// names, and records their entries.
func (c *computation) traceTests(e edit, keys map[string]bool) error {
	named := map[string]bool{}
	for _, s := range c.d.Scenarios {
		if s.Kind == "test" {
			named[s.Dir+" "+s.Test] = true
		}
	}
	for _, p := range c.cov.Packages {
		if p.Error != "" {
			continue
		}
		var tests []string
		for _, t := range p.Tests {
			enters := slices.ContainsFunc(t.Executed, func(i int) bool { return keys[c.cov.Functions[i]] })
			if named[p.Dir+" "+t.Name] || (!strings.Contains(t.Name, "/") && enters) {
				tests = append(tests, t.Name)
			}
		}
		if len(tests) == 0 {
			continue
		}
		c.report("flows in ./" + p.Dir)
		if err := c.lab.apply(e); err != nil {
			return err
		}
		bin, err := c.lab.testBinary(p.Dir)
		if err != nil {
			continue // no run: the flows it would show are unjudged
		}
		res, err := c.lab.runTestsOf(p.Dir, bin, tests)
		if err != nil {
			return err
		}
		for _, r := range res {
			c.d.Runs = append(c.d.Runs, TraceRun{Dir: p.Dir, Test: r.name, Outcome: r.outcome, Entries: intsOrEmpty(r.trace), Cut: r.cut})
		}
	}
	return nil
}

// traceScenarios runs each command scenario's program, built with the
// instrumentation e, and records its entries.
func (c *computation) traceScenarios(e edit) error {
	for _, s := range c.d.Scenarios {
		if s.Kind != "command" {
			continue
		}
		c.report("scenario " + s.Scenario)
		if err := c.lab.apply(c.programEdit(s.Program, cloneEdit(e))); err != nil {
			return err
		}
		bin, err := c.lab.buildBinary(programDir(s.Program))
		if err != nil {
			continue
		}
		code, _, out, err := c.lab.runProgram(bin, s.Args, "NEEDLEBENCH_TRACE=$OUT/trace")
		if err != nil {
			continue
		}
		trace, cut := readIDs(path.Join(out, "trace"))
		c.d.Runs = append(c.d.Runs, TraceRun{Scenario: s.Scenario, Outcome: "exit " + strconv.Itoa(code), Entries: intsOrEmpty(trace), Cut: cut})
	}
	return nil
}

func cloneEdit(e edit) edit {
	out := edit{}
	for k, v := range e {
		out[k] = v
	}
	return out
}

// intsOrEmpty keeps a trace's order; nil is an empty list.
func intsOrEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
