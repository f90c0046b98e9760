package testrun

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// ProbeKind is what a probe records.
type ProbeKind int

// The probe kinds.
const (
	// ProbeEntry fires when a function is entered and records the call
	// site that entered it: the file and line of its caller's frame, as
	// the runtime reports it (interface calls, method values and
	// function-typed variables included; compiler-made wrappers are not
	// frames of their own).
	ProbeEntry ProbeKind = iota
	// ProbeStatement fires when a statement runs.
	ProbeStatement
)

// Probe asks for one probe in a checkout's Go source.
type Probe struct {
	ID   int
	Kind ProbeKind
	// File is the slash path of a Go file relative to the checkout.
	File string
	// Entry: Line is a line of the function's declaration between its
	// keyword and its body's opening brace (its name's line), or a line
	// inside a function literal's body that no nested literal holds.
	// Statement: the first statement of a block that starts within
	// Line..EndLine gets the probe.
	Line, EndLine int
}

// instrumented is what instrumenting a checkout did.
type instrumented struct {
	placed  map[int]bool // probe ids that found their place
	helpers []string     // files written (checkout-relative), removed again by restore
	saved   map[string][]byte
}

// traceEnv names the file the probes append their events to.
const traceEnv = "NEEDLE_TRACE_FILE"

// instrument edits the Go files of checkout in place: each probe becomes a
// call of a helper function written beside the file (one per package
// directory and package clause). Insertions never add a line, so every
// position the runtime reports is the original source's line. Probes
// whose place cannot be found are left out (placed says which were set).
func instrument(checkout string, probes []Probe) (*instrumented, error) {
	ins := &instrumented{placed: map[int]bool{}, saved: map[string][]byte{}}
	files, byFile, err := probesByFile(probes)
	if err != nil {
		return nil, err
	}
	helpers := map[string]string{} // dir + " " + package clause → helper function name
	for _, rel := range files {
		if err := ins.instrumentFile(checkout, rel, byFile[rel], helpers); err != nil {
			return nil, err
		}
	}
	if err := ins.writeHelpers(checkout, helpers); err != nil {
		return nil, err
	}
	return ins, nil
}

// probesByFile groups the probes by file, the files sorted, refusing a
// path that is not a clean Go file path inside the checkout.
func probesByFile(probes []Probe) ([]string, map[string][]Probe, error) {
	byFile := map[string][]Probe{}
	var files []string
	for _, p := range probes {
		if !strings.HasSuffix(p.File, ".go") || path.IsAbs(p.File) || path.Clean(p.File) != p.File || strings.HasPrefix(p.File, "../") {
			return nil, nil, fmt.Errorf("instrument: %q is not a Go file of the checkout", p.File)
		}
		if _, ok := byFile[p.File]; !ok {
			files = append(files, p.File)
		}
		byFile[p.File] = append(byFile[p.File], p)
	}
	sort.Strings(files)
	return files, byFile, nil
}

// instrumentFile inserts the calls of the probes of the file rel, saving
// its source for restore, and names in helpers the helper its package
// needs; a file that does not parse is left alone.
func (ins *instrumented) instrumentFile(checkout, rel string, probes []Probe, helpers map[string]string) error {
	abs := filepath.Join(checkout, filepath.FromSlash(rel))
	src, err := os.ReadFile(abs)
	if err != nil {
		return fmt.Errorf("instrument: %w", err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil // the build will say; nothing is placed here
	}
	pkgName := f.Name.Name
	key := path.Dir(rel) + " " + pkgName
	fn, ok := helpers[key]
	if !ok {
		fn = "needleTraceProbe_" + contentid.OfBytes("needle.trace-probe", []byte(key))[3:11]
		helpers[key] = fn
	}
	var edits []edit
	for _, p := range probes {
		if off, ok := probePlace(fset, f, p); ok {
			text := fmt.Sprintf(" %s(%d, %d);", fn, p.ID, eventStatement)
			if p.Kind == ProbeEntry {
				text = fmt.Sprintf(" %s(%d, %d); defer %s(%d, %d);", fn, p.ID, eventEntry, fn, p.ID, eventExit)
			}
			edits = append(edits, edit{off, text})
			ins.placed[p.ID] = true
		}
	}
	if len(edits) == 0 {
		return nil
	}
	ins.saved[rel] = src
	if err := os.WriteFile(abs, applyEdits(src, edits), 0o644); err != nil {
		return fmt.Errorf("instrument: %w", err)
	}
	return nil
}

// writeHelpers writes the helper file of each package the probes need, in
// key order, refusing to overwrite a file that exists.
func (ins *instrumented) writeHelpers(checkout string, helpers map[string]string) error {
	keys := make([]string, 0, len(helpers))
	for k := range helpers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		dir, pkgName, _ := strings.Cut(key, " ")
		name := "zz_" + helpers[key] + ".go"
		if strings.HasSuffix(pkgName, "_test") {
			name = "zz_" + helpers[key] + "_test.go" // the external test package's files are test files
		}
		rel := path.Join(dir, name)
		abs := filepath.Join(checkout, filepath.FromSlash(rel))
		if _, err := os.Lstat(abs); err == nil {
			return fmt.Errorf("instrument: %s exists", rel)
		}
		if err := os.WriteFile(abs, []byte(helperSource(pkgName, helpers[key])), 0o644); err != nil {
			return fmt.Errorf("instrument: %w", err)
		}
		ins.helpers = append(ins.helpers, rel)
	}
	return nil
}

// restore puts the checkout's files back as they were.
func (ins *instrumented) restore(checkout string) error {
	var errs []error
	for rel, src := range ins.saved {
		errs = append(errs, os.WriteFile(filepath.Join(checkout, filepath.FromSlash(rel)), src, 0o644))
	}
	for _, rel := range ins.helpers {
		if err := os.Remove(filepath.Join(checkout, filepath.FromSlash(rel))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type edit struct {
	off  int
	text string
}

func applyEdits(src []byte, edits []edit) []byte {
	slices.SortStableFunc(edits, func(a, b edit) int { return a.off - b.off })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(src[last:e.off])
		out.WriteString(e.text)
		last = e.off
	}
	out.Write(src[last:])
	return out.Bytes()
}

// probePlace is the byte offset where p's call goes: just after the
// opening brace of the function's body (an entry), or just before the
// statement (a statement), on the same line either way.
func probePlace(fset *token.FileSet, f *ast.File, p Probe) (int, bool) {
	line := func(pos token.Pos) int { return fset.Position(pos).Line }
	off := func(pos token.Pos) int { return fset.Position(pos).Offset }
	switch p.Kind {
	case ProbeEntry:
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if line(fd.Pos()) <= p.Line && p.Line <= line(fd.Body.Lbrace) {
				return off(fd.Body.Lbrace) + 1, true
			}
		}
		// A function literal whose body holds the line and no nested
		// literal's does.
		var best *ast.FuncLit
		ast.Inspect(f, func(n ast.Node) bool {
			if fl, ok := n.(*ast.FuncLit); ok && line(fl.Body.Lbrace) <= p.Line && p.Line <= line(fl.Body.Rbrace) {
				best = fl
			}
			return true
		})
		if best != nil {
			return off(best.Body.Lbrace) + 1, true
		}
	case ProbeStatement:
		end := max(p.EndLine, p.Line)
		found := -1
		ast.Inspect(f, func(n ast.Node) bool {
			if found >= 0 {
				return false
			}
			var list []ast.Stmt
			switch b := n.(type) {
			case *ast.BlockStmt:
				list = b.List
			case *ast.CaseClause:
				list = b.Body
			case *ast.CommClause:
				list = b.Body
			}
			for _, s := range list {
				if l := line(s.Pos()); p.Line <= l && l <= end {
					found = off(s.Pos())
					return false
				}
			}
			return true
		})
		if found >= 0 {
			return found, true
		}
	}
	return 0, false
}

// The kinds of event a probe writes.
const (
	eventEntry     = 0
	eventStatement = 1
	eventExit      = 2 // a deferred call at the entry: the function returned (or panicked through)
)

// helperSource is the probe function of one package: it appends one line
// per event to the file traceEnv names — the probe id, the event's kind,
// the caller's file and line (for a statement, the statement's own; none
// for an exit), the top-level test on the stack, whether a test runner's
// goroutine is on it, and the process and goroutine it ran on — in one
// write, so lines of concurrent writers (goroutines, subprocesses of the
// test) never mix. The imports are renamed so that they cannot collide
// with the package's own names. It is compiled at the language version of
// the module's go.mod, which may be old (pflag v1.0.5 says go 1.12): no
// feature newer than that (a 0o octal literal is go1.13).
// Not split: the body is one template of the generated Go file, kept whole
// so that it reads as the program it writes into the checkout.
func helperSource(pkgName, fn string) string {
	return strings.NewReplacer("PKG", pkgName, "FN", fn).Replace(`// Code generated by Needle for a traced run. DO NOT EDIT.

package PKG

import (
	FN_os "os"
	FN_runtime "runtime"
	FN_strconv "strconv"
	FN_strings "strings"
	FN_sync "sync"
	FN_atomic "sync/atomic"
)

var (
	FN_once  FN_sync.Once
	FN_file  *FN_os.File
	FN_pid   string
	FN_count FN_atomic.Int64
	// FN_path is read when the package is initialized, before any test
	// runs: a test that clears the environment must not hide its events.
	FN_path = FN_os.Getenv("` + traceEnv + `")
)

// FN_goroutine is the running goroutine's id, as its stack's header says.
func FN_goroutine() string {
	var buf [64]byte
	head := string(buf[:FN_runtime.Stack(buf[:], false)])
	head = FN_strings.TrimPrefix(head, "goroutine ")
	id, _, _ := FN_strings.Cut(head, " ")
	return id
}

//go:noinline
func FN(id, kind int) {
	FN_once.Do(func() {
		if FN_path != "" {
			FN_file, _ = FN_os.OpenFile(FN_path, FN_os.O_WRONLY|FN_os.O_APPEND|FN_os.O_CREATE, 0600)
		}
		FN_pid = FN_strconv.Itoa(FN_os.Getpid())
	})
	if FN_file == nil || FN_count.Add(1) > ` + fmt.Sprint(maxTraceEvents) + ` {
		return
	}
	where := FN_pid + ":" + FN_goroutine()
	if kind == ` + fmt.Sprint(eventExit) + ` {
		_, _ = FN_file.WriteString(FN_strconv.Itoa(id) + "\t2\t\t0\t\t0\t" + where + "\n")
		return
	}
	skip := 3 // the caller of the instrumented function
	if kind == ` + fmt.Sprint(eventStatement) + ` {
		skip = 2 // the statement's own function
	}
	var pcs [128]uintptr
	n := FN_runtime.Callers(skip, pcs[:])
	frames := FN_runtime.CallersFrames(pcs[:n])
	var caller FN_runtime.Frame
	test, inTest := "", "0"
	for more, found := true, false; more; {
		var fr FN_runtime.Frame
		fr, more = frames.Next()
		// The call site is the first frame of the program's own: a call
		// through reflect (Value.Call) or the runtime is made by the frame
		// that asked them.
		if !found && !FN_strings.HasPrefix(fr.Function, "reflect.") && !FN_strings.HasPrefix(fr.Function, "runtime.") {
			caller, found = fr, true
		}
		if fr.Function == "testing.tRunner" {
			inTest = "1"
		}
		name := fr.Function
		if i := FN_strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if _, after, ok := FN_strings.Cut(name, "."); ok && FN_strings.HasPrefix(after, "Test") {
			if top, _, _ := FN_strings.Cut(after, "."); top != "TestMain" {
				test = top
			}
		}
	}
	line := FN_strconv.Itoa(id) + "\t" + FN_strconv.Itoa(kind) + "\t" + caller.File + "\t" + FN_strconv.Itoa(caller.Line) + "\t" + test + "\t" + inTest + "\t" + where + "\n"
	_, _ = FN_file.WriteString(line)
}
`)
}

// maxTraceEvents bounds the events one process of a traced run records.
const maxTraceEvents = 200000
