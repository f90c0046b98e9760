package testrun

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// traceFixture materializes testdata/trace.txtar and returns the checkout
// with the probes of its flow: entries of app.Run (1), version (2) and
// defaultPrinter (3), and the statement that calls version (4).
func traceFixture(t *testing.T) (string, []Probe, map[string]int) {
	t.Helper()
	dir := MustMaterialize(t, "trace.txtar")
	file := filepath.Join(dir, "app", "app.go")
	lines := map[string]int{}
	for _, fn := range []string{"Run", "version", "defaultPrinter"} {
		lines[fn], _ = funcSpan(t, file, fn)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range bytes.Split(src, []byte("\n")) {
		switch string(bytes.TrimSpace(l)) {
		case "version(w)":
			lines["call version"] = i + 1
		case `Printer(w, "app 1.0")`:
			lines["print version"] = i + 1
		case `Printer(w, "usage")`:
			lines["print usage"] = i + 1
		}
	}
	probes := []Probe{
		{ID: 1, Kind: ProbeEntry, File: "app/app.go", Line: lines["Run"]},
		{ID: 2, Kind: ProbeEntry, File: "app/app.go", Line: lines["version"]},
		{ID: 3, Kind: ProbeEntry, File: "app/app.go", Line: lines["defaultPrinter"]},
		{ID: 4, Kind: ProbeStatement, File: "app/app.go", Line: lines["call version"], EndLine: lines["call version"]},
	}
	return dir, probes, lines
}

// snapshotFiles reads every file under dir.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hasEvent(evs []TraceEvent, want TraceEvent) bool {
	return slices.ContainsFunc(evs, func(ev TraceEvent) bool {
		return ev.Probe == want.Probe && ev.File == want.File && ev.Line == want.Line && ev.Test == want.Test
	})
}

func TestRunner_Trace(t *testing.T) {
	r := MustRunner(t)
	dir, probes, lines := traceFixture(t)
	before := snapshotFiles(t, dir)
	res := r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./app", Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Failed || res.Tests["TestVersion"] != "pass" || res.Tests["TestUsage"] != "pass" || res.Tests["TestFails"] != "fail" {
		t.Fatalf("status %s (%s), tests %v\n%s", res.Status, res.Reason, res.Tests, res.Output)
	}
	for id := 1; id <= 4; id++ {
		if !res.Placed[id] {
			t.Errorf("probe %d not placed", id)
		}
	}
	want := []struct {
		what string
		ev   TraceEvent
	}{
		{"version entered from its call site", TraceEvent{Probe: 2, File: "app/app.go", Line: lines["call version"], Test: "TestVersion"}},
		{"the printer entered through the function-typed variable, from version", TraceEvent{Probe: 3, File: "app/app.go", Line: lines["print version"], Test: "TestVersion"}},
		{"the printer entered from Run's usage line", TraceEvent{Probe: 3, File: "app/app.go", Line: lines["print usage"], Test: "TestUsage"}},
		{"the statement behind the condition", TraceEvent{Probe: 4, File: "app/app.go", Line: lines["call version"], Test: "TestVersion"}},
	}
	for _, w := range want {
		if !hasEvent(res.Events, w.ev) {
			t.Errorf("%s: no event %+v in %+v", w.what, w.ev, res.Events)
		}
	}
	for _, ev := range res.Events {
		if ev.Test == "TestUsage" && (ev.Probe == 2 || ev.Probe == 4) {
			t.Errorf("TestUsage took the --version branch: %+v", ev)
		}
		if ev.Probe == 1 && ev.Test == "TestVersion" && ev.File != "app/app_test.go" {
			t.Errorf("Run entered through the interface from %s:%d, want the test file", ev.File, ev.Line)
		}
	}
	if len(res.Packages) == 0 || !slices.ContainsFunc(res.Packages, func(p CompiledPackage) bool { return slices.Contains(p.Files, "app/app.go") }) {
		t.Errorf("compiled packages %+v lack app/app.go", res.Packages)
	}
	for _, p := range res.Packages {
		for _, f := range p.Files {
			if filepath.Base(f)[:3] == "zz_" {
				t.Errorf("a probe helper %s is listed as a dependency", f)
			}
		}
	}
	if after := snapshotFiles(t, dir); !mapsEqual(before, after) {
		t.Errorf("the checkout was not restored")
	}
}

func TestRunner_TraceOneTest(t *testing.T) {
	r := MustRunner(t)
	dir, probes, lines := traceFixture(t)
	res := r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./app", Tests: []string{"TestUsage"}, Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Passed || len(res.Tests) != 1 {
		t.Fatalf("status %s (%s), tests %v", res.Status, res.Reason, res.Tests)
	}
	for _, ev := range res.Events {
		if ev.Probe == 2 || ev.Probe == 4 {
			t.Errorf("the --version branch ran in TestUsage: %+v", ev)
		}
	}
	if !hasEvent(res.Events, TraceEvent{Probe: 3, File: "app/app.go", Line: lines["print usage"], Test: "TestUsage"}) {
		t.Errorf("no printer entry from the usage line: %+v", res.Events)
	}
}

// TestRunner_TraceOldLanguage: the probes compile in a module whose go.mod
// asks for an old language version (pflag v1.0.5 says go 1.12): the
// helper Needle adds is written in the language every version accepts (a
// 0o octal literal, go1.13, failed that build, and a true flow was
// rejected as "does not build").
func TestRunner_TraceOldLanguage(t *testing.T) {
	r := MustRunner(t)
	dir, probes, lines := traceFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/app\n\ngo 1.12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./app", Tests: []string{"TestUsage"}, Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Passed {
		t.Fatalf("status %s (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	if !hasEvent(res.Events, TraceEvent{Probe: 3, File: "app/app.go", Line: lines["print usage"], Test: "TestUsage"}) {
		t.Errorf("no printer entry from the usage line: %+v", res.Events)
	}
}

// TestRunner_TraceClearenv: a test that clears the environment before it
// runs the flow (urfave/cli's tests of environment variables do) still
// shows its events: the probes read where to write them when the package
// is initialized, not at their first event.
func TestRunner_TraceClearenv(t *testing.T) {
	r := MustRunner(t)
	dir, probes, lines := traceFixture(t)
	test := "package app\n\nimport (\n\t\"bytes\"\n\t\"os\"\n\t\"testing\"\n)\n\n" +
		"func TestClearenv(t *testing.T) {\n\tos.Clearenv()\n\tvar b bytes.Buffer\n\tNew().Run(&b, []string{\"--version\"})\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "app", "env_test.go"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./app", Tests: []string{"TestClearenv"}, Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Passed {
		t.Fatalf("status %s (%s)\n%s", res.Status, res.Reason, res.Output)
	}
	if !hasEvent(res.Events, TraceEvent{Probe: 2, File: "app/app.go", Line: lines["call version"], Test: "TestClearenv"}) {
		t.Errorf("no entry of version after os.Clearenv: %+v", res.Events)
	}
}

func TestRunner_TraceCommand(t *testing.T) {
	r := MustRunner(t)
	dir, probes, lines := traceFixture(t)
	before := snapshotFiles(t, dir)
	res := r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./cmd/app", Command: []string{"--version"}, Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Passed || res.ExitCode != 0 || !bytes.Contains(res.Output, []byte("app 1.0")) {
		t.Fatalf("status %s (%s), exit %d, output %q", res.Status, res.Reason, res.ExitCode, res.Output)
	}
	mainLine := 0
	src, _ := os.ReadFile(filepath.Join(dir, "cmd", "app", "main.go"))
	for i, l := range bytes.Split(src, []byte("\n")) {
		if bytes.Contains(l, []byte("app.New().Run")) {
			mainLine = i + 1
		}
	}
	for _, ev := range []TraceEvent{
		{Probe: 1, File: "cmd/app/main.go", Line: mainLine},
		{Probe: 2, File: "app/app.go", Line: lines["call version"]},
		{Probe: 3, File: "app/app.go", Line: lines["print version"]},
	} {
		if !hasEvent(res.Events, ev) {
			t.Errorf("no event %+v in %+v", ev, res.Events)
		}
	}
	// Without the flag the branch is not taken.
	res = r.Trace(context.Background(), TraceSpec{Checkout: dir, Package: "./cmd/app", Command: []string{}, Probes: probes, Deadline: 5 * time.Minute})
	if res.Status != Failed || res.ExitCode != 2 {
		t.Fatalf("status %s (%s), exit %d", res.Status, res.Reason, res.ExitCode)
	}
	for _, ev := range res.Events {
		if ev.Probe == 2 {
			t.Errorf("version ran without --version: %+v", ev)
		}
	}
	if after := snapshotFiles(t, dir); !mapsEqual(before, after) {
		t.Errorf("the checkout was not restored")
	}
}

func TestRunner_TraceInvalid(t *testing.T) {
	r := MustRunner(t)
	dir, probes, _ := traceFixture(t)
	for name, spec := range map[string]TraceSpec{
		"NoProbe":      {Checkout: dir, Package: "./app", Deadline: time.Minute},
		"FlagAsTest":   {Checkout: dir, Package: "./app", Tests: []string{"-test.v"}, Probes: probes, Deadline: time.Minute},
		"Wildcard":     {Checkout: dir, Package: "./...", Probes: probes, Deadline: time.Minute},
		"TwoSubtests":  {Checkout: dir, Package: "./app", Tests: []string{"TestA/x", "TestB"}, Probes: probes, Deadline: time.Minute},
		"NotAGoFile":   {Checkout: dir, Package: "./app", Probes: []Probe{{ID: 1, File: "go.mod", Line: 1}}, Deadline: time.Minute},
		"LeavesModule": {Checkout: dir, Package: "./app", Probes: []Probe{{ID: 1, File: "../x.go", Line: 1}}, Deadline: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.Trace(context.Background(), spec)
			if res.Status != Invalid && res.Status != Errored {
				t.Fatalf("status %s, want invalid or errored", res.Status)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
