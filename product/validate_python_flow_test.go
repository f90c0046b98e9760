package product

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidate_PythonFlows proves Python flows by running their scenario
// (Debian's Python, pytest and coverage, in the sandbox): a test or a
// command enters each step from a call in the step before, in order, and
// runs the last step's lines. Steps out of order, a scenario that does
// not take the flow or fails, are rejected; a scenario Needle cannot run
// is undecided; without a sandbox the flow is lexical.
func TestValidate_PythonFlows(t *testing.T) {
	repo, te := mustPyCLI(t)
	mainStart := lineWith(t, repo, "lines.py", "def main(argv=None):")
	mainEnd := lineWith(t, repo, "lines.py", "    print(len(split_lines(")
	split := lineWith(t, repo, "lines.py", "def split_lines(")
	test := lineWith(t, repo, "tests/test_lines.py", "def test_crlf(")
	step := func(path string, start, end int) string {
		return fmt.Sprintf(`{"path":%q,"start_line":%d,"end_line":%d,"summary":"the next step"}`, path, start, end)
	}
	flow := func(subject, scenario string, steps ...string) string {
		return fmt.Sprintf(`{"kind":"runtime_flow","subject":{"kind":"symbol","name":%q},"scenario":%q,"steps":[%s]}`, subject, scenario, strings.Join(steps, ","))
	}
	mainStep, splitStep := step("lines.py", mainStart, mainEnd), step("lines.py", split, split+2)
	for _, c := range []struct{ name, scenario, want, why string }{
		{"main", "pytest tests/test_lines.py::test_crlf", "certified", "a test takes the flow"},
		{"main", "`python lines.py --crlf`", "certified", "a command takes the flow"},
		{"main", "python -m pytest tests/test_lines.py", "rejected", "test_broken failed"},
		{"main", "tests/test_lines.py::test_split", "rejected", "did not enter lines.py"},
		{"main", "tests/test_lines.py::test_broken", "rejected", "did not pass when Needle ran it"},
		{"main", "when a user splits a file at CRLF", "undecided", "names none it can run"},
	} {
		res := te.checkVerdict(t, flow(c.name, c.scenario, mainStep, splitStep), c.want, c.why)
		if c.want == "undecided" && !strings.Contains(strings.Join(res.Undecided, "\n"), c.why) {
			t.Errorf("%s: %q", c.why, res.Undecided)
		}
		if c.want != "certified" || res.Status != "certified" {
			continue
		}
		body := te.certificateBody(t, res.CertificateID)
		for _, want := range []string{`"reach":"executed"`, `contract_complete`, `"seen":["lines.py:`, `-> split_lines"]`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the certificate lacks %s: %s", c.why, want, body)
			}
		}
	}
	// Three steps from the test, and the steps out of order.
	te.checkVerdict(t, flow("test_crlf", "tests/test_lines.py::test_crlf", step("tests/test_lines.py", test, test+3), mainStep, splitStep), "certified", "from the test")
	te.checkVerdict(t, flow("main", "tests/test_lines.py::test_crlf", splitStep, mainStep), "rejected", "did not enter lines.py")
	te.checkVerdict(t, flow("split_lines", "tests/test_lines.py::test_crlf", splitStep, mainStep), "rejected", "did not enter lines.py")
	r := te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"main"}}`)
	if !strings.Contains(r.Context, "executed by Needle in its sandbox: python -m pytest 'tests/test_lines.py::test_crlf', passed") &&
		!strings.Contains(r.Context, "executed by Needle in its sandbox: python lines.py --crlf, exit 0") {
		t.Errorf("the context does not say the flow ran:\n%s", r.Context)
	}

	noSandbox := MustEngine(t, repo, withoutSandbox)
	res := noSandbox.checkVerdict(t, flow("main", "tests/test_lines.py::test_crlf", mainStep, splitStep), "certified", "no sandbox")
	if res.Level != "lexical" {
		t.Errorf("a Python flow without a sandbox: level %s: %+v", res.Level, res)
	}
}
