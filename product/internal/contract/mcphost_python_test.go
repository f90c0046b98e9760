//go:build contract

package contract

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/testenv"
)

// hostShoutPy is a click command, and hostShoutTest its pytest test, of the
// Python repository the main model asks about.
const (
	hostShoutPy = `import click


@click.command()
@click.option("--loud/--quiet", default=False, help="Shout.")
def shout(loud):
    click.echo("HI" if loud else "hi")
`
	hostShoutTest = `from click.testing import CliRunner

from shout import shout


def test_loud():
    assert CliRunner().invoke(shout, ["--loud"]).output == "HI\n"


def test_named():
    assert "--loud" in str(shout.params)
`
)

// TestContract_CodexExecHostPythonClickOption is issue 27's contract: the
// real codex exec is the MCP host of needle mcp serve on a Python
// repository (click copied in from Debian's package), and the model's
// need_context for a click option is answered from certified evidence
// that Needle executed: the option's definition, proven by Python's
// parser, and the focused test Needle ran with pytest under coverage in
// its sandbox, served with Needle's own command. A test that only names
// the option is not certified.
func TestContract_CodexExecHostPythonClickOption(t *testing.T) {
	codex := codexBin(t)
	needle := needleBin(t)
	python := testenv.PythonWithPytest(t)
	dir := t.TempDir()
	repo, data := filepath.Join(dir, "repo"), filepath.Join(dir, "data")
	testenv.CopyTree(t, testenv.PythonPackageDir(testenv.Unpacked(t, testenv.PythonClick)), repo)
	for name, content := range map[string]string{"shout.py": hostShoutPy, "tests/test_shout.py": hostShoutTest} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCommit(t, repo)
	runNeedle(t, needle, "", "config", "set", "--data-dir", data, "tests.codex", codex)
	runNeedle(t, needle, "", "config", "set", "--data-dir", data, "python.interpreter", python)

	propose := func(p string) (status, artifact string) {
		t.Helper()
		var res struct {
			Status     string `json:"status"`
			ArtifactID string `json:"artifact_id"`
		}
		// A proposal not certified exits 1, its verdict on stdout.
		cmd := exec.Command(needle, "evidence", "propose", "--repository", repo, "--data-dir", data, "-")
		cmd.Stdin = strings.NewReader(p)
		out, err := cmd.Output()
		if jerr := json.Unmarshal(out, &res); jerr != nil {
			t.Fatalf("evidence propose: %s (%v, %v)", out, err, jerr)
		}
		return res.Status, res.ArtifactID
	}
	if st, _ := propose(`{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--loud"},"path":"shout.py","start_line":5,"end_line":5}`); st != "certified" {
		t.Fatalf("the option's definition: %s", st)
	}
	if st, _ := propose(`{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--loud"},"tests":[{"path":"tests/test_shout.py","name":"test_named"}]}`); st != "rejected" {
		t.Errorf("a test that only names the option: %s", st)
	}
	st, tests := propose(`{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--loud"},"tests":[{"path":"tests/test_shout.py","name":"tests/test_shout.py::test_loud","command":"pytest"}]}`)
	if st != "certified" {
		t.Fatalf("the focused test: %s", st)
	}

	need := `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--loud"}}`
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{
		namespacedCall("call_needle", "mcp__needle", "need_context", need),
		fakemodel.Message("", "", "tests/test_shout.py::test_loud runs --loud.", fakemodel.Usage{Input: 200, Output: 10}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	stdout := codexExec(t, codex, needle, repo, data, model.URL(), "Which test exercises the --loud option?")
	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests; want the call and the turn after it\n%s", len(reqs), stdout)
	}
	if call := toolCallItem(t, stdout, "needle", "need_context"); call.Status != "completed" || call.Error != nil {
		t.Errorf("codex's mcp_tool_call item: status %q, error %v", call.Status, string(call.Error))
	}
	output := callOutput(t, reqs[1].Body, "call_needle")
	for _, want := range []string{tests, "executed by Needle in its sandbox", "(Python 3.", "the command receiving --loud",
		`run: python -m pytest 'tests/test_shout.py::test_loud'`} {
		if !strings.Contains(output, want) {
			t.Errorf("the model's next request lacks %q:\n%s", want, clip(output))
		}
	}
	if strings.Contains(output, "test_named") {
		t.Errorf("the test that only names the option reached the model:\n%s", clip(output))
	}
}
