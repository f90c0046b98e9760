package product

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// typerApp is a command line written with typer as its users write one:
// Option defaults old and new, Annotated, names from parameters, a bool's
// --x/--no-x, envvar, an Argument, a helper whose defaults are no options.
const typerApp = `"""Sync files to a remote."""
from pathlib import Path
from typing import Optional

import typer
from typing_extensions import Annotated

app = typer.Typer(help="Sync files.")


def default_remote(name="origin", *, retries=3):
    """Not a command: its parameters are no options (--retries is one of push's)."""
    return name


@app.command()
def push(
    source: Path = typer.Argument(Path("."), envvar="SYNC_SOURCE"),
    remote: str = typer.Option("origin", "--remote", "-r", help="Remote to push to."),
    dry_run: bool = False,
    retries: Annotated[int, typer.Option(envvar="SYNC_RETRIES")] = 3,
    token: Optional[str] = typer.Option(None, envvar=["SYNC_TOKEN", "GITHUB_TOKEN"]),
):
    """Push SOURCE to the remote; --dry-run prints what would change."""
    typer.echo(f"{source} -> {remote} {dry_run} {retries} {token is not None}")


@app.command("pull")
def pull_cmd(
    verbose: Annotated[bool, typer.Option("--verbose/--quiet", "-v/-q")] = False,
    max_size: int = typer.Option(1 << 20, help="Largest file, in bytes (see --retries)."),
):
    typer.echo(str(verbose) + default_remote())
`

// envSettings reads its settings from the environment in every way
// Python code does; the oracle calls load, which reaches each read.
const envSettings = `import os
from os import environ, getenv

DEFAULTS = {"SETTINGS_HOME": "/etc/app"}


def load():
    home = os.environ["HOME"]
    level = os.environ.get("LOG_LEVEL", "info")
    workers = int(getenv("WORKERS", "4"))
    if "NO_COLOR" in os.environ:
        level += " plain"
    environ.setdefault("APP_MODE", "prod")
    token = os.environ.pop("ONE_TIME_TOKEN", None)
    os.environ["APP_STARTED"] = "1"
    return dict(home=home, level=level, workers=workers, token=token,
                settings=DEFAULTS["SETTINGS_HOME"], docs="set LOG_LEVEL or WORKERS")
`

// TestValidate_PythonOptions locates Python's options and environment
// variables by meaning, judged by running the code (testenv.PythonOptions:
// argparse and click record what each call defined, typer builds its
// click command, os.environ records the reads): every flag and variable a
// run saw defined is certified at the call's lines, by any of its names,
// labelled static; every other line of the file that names it — a help
// text, a write to os.environ, a dictionary key, a helper's parameter —
// is rejected. The sources are pygments' argparse command line and
// flask's click one, from Debian, and a typer app and a settings module
// written as their users write them.
func TestValidate_PythonOptions(t *testing.T) {
	repo := mustPythonRepo(t, testenv.PythonPygments, testenv.PythonFlask, testenv.PythonClick, testenv.PythonTyper, testenv.PythonTypingExtensions, testenv.PythonMarkdown)
	MustWriteFile(t, filepath.Join(repo, "sync", "__init__.py"), "")
	MustWriteFile(t, filepath.Join(repo, "sync", "app.py"), typerApp)
	MustWriteFile(t, filepath.Join(repo, "sync", "settings.py"), envSettings)
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sync")
	te := MustEngine(t, repo)
	python := testenv.Python3(t)
	for _, c := range []struct {
		file, module string
		stubs        []string
		calls        []string
		min          int
	}{
		{"pygments/cmdline.py", "pygments.cmdline", nil, []string{"m.main(['pygmentize', '-h'])"}, 20},
		{"flask/cli.py", "flask.cli", []string{"flask", "werkzeug"}, nil, 15},
		{"markdown/__main__.py", "markdown.__main__", nil, []string{"m.parse_options(['doc.md'])"}, 20},
		{"sync/app.py", "sync.app", nil, []string{"typer_apps()"}, 7},
		{"sync/settings.py", "sync.settings", nil, []string{"m.load()"}, 6},
	} {
		t.Run(c.module, func(t *testing.T) {
			seen := testenv.PythonOptions(t, python, []string{repo}, filepath.Join(repo, c.file), c.module, c.stubs, c.calls...)
			names := map[string]bool{}
			for _, d := range seen {
				for _, n := range d.Names {
					names[d.Kind+" "+n] = true
				}
			}
			if len(names) < c.min {
				t.Fatalf("the run saw %d names in %s: %v", len(names), c.file, seen)
			}
			for _, d := range seen {
				kind := map[string]string{"flag": "cli_option", "env": "configuration_key"}[d.Kind]
				for _, n := range d.Names {
					res := te.checkVerdict(t, locProposal(kind, n, c.file, d.Start, d.End), "certified", fmt.Sprintf("%s %s at %d-%d", kind, n, d.Start, d.End))
					if res.Status == "certified" {
						if res.Level != "ast" {
							t.Errorf("%s %s: level %s", kind, n, res.Level)
						}
						if notes := te.certificateNotes(t, res.CertificateID); !strings.Contains(notes, "static: that the call is") {
							t.Errorf("%s %s: not labelled static: %s", kind, n, notes)
						}
					}
				}
				if len(d.Names) > 1 {
					te.checkVerdict(t, locProposal(kind, strings.Join(d.Names, ", "), c.file, d.Start, d.End), "certified", "all the names of one flag")
				}
			}
			lines := strings.Split(string(MustReadFile(t, filepath.Join(repo, c.file))), "\n")
			negatives := 0
			for key := range names {
				kind, n, _ := strings.Cut(key, " ")
				subject := map[string]string{"flag": "cli_option", "env": "configuration_key"}[kind]
				mention := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(n) + `($|[^\w-])`)
				for i, l := range lines {
					line := i + 1
					if !mention.MatchString(l) || slices.ContainsFunc(seen, func(d testenv.PyDefined) bool {
						return d.Kind == kind && slices.Contains(d.Names, n) && d.Start <= line && line <= d.End
					}) {
						continue
					}
					negatives++
					res := te.propose(locProposal(subject, n, c.file, line, line))
					if res.Status == "certified" {
						t.Errorf("%s %s certified at %s:%d, where no run defines it: %s", subject, n, c.file, line, strings.TrimSpace(l))
					}
				}
			}
			if negatives == 0 {
				t.Errorf("no line of %s names an option outside its definition: nothing was shown not to be one", c.file)
			}
			t.Logf("%s: %d names the run saw, %d lines naming one elsewhere", c.file, len(names), negatives)
		})
	}
	// A variable the program sets is not one it reads; nor is a string in
	// a dictionary.
	started := lineWith(t, repo, "sync/settings.py", `    os.environ["APP_STARTED"] = "1"`)
	te.checkVerdict(t, locProposal("configuration_key", "APP_STARTED", "sync/settings.py", started, started), "rejected", "a string equal to the name is a use")
	home := lineWith(t, repo, "sync/settings.py", `DEFAULTS = {`)
	te.checkVerdict(t, locProposal("configuration_key", "SETTINGS_HOME", "sync/settings.py", home, home), "rejected", "is not defined in sync/settings.py:")
	// A citation past the function that defines the flag.
	host := lineWith(t, repo, "flask/cli.py", `@click.option("--host", "-h"`)
	te.checkVerdict(t, locProposal("cli_option", "--host", "flask/cli.py", host-30, host), "rejected", "runs beyond the function or statement")
}

// TestValidate_PythonOptionsNewUser is the new user's repository:
// an argparse command line and its pytest tests. The test line that
// passes "--crlf" is not where the option is implemented, and a parser
// built in a test file defines options for tests only.
func TestValidate_PythonOptionsNewUser(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "lines")
	MustWriteFile(t, filepath.Join(repo, "lines.py"), `import argparse
import sys


def split_lines(text, crlf=False):
    return text.split("\r\n" if crlf else "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="lines")
    parser.add_argument("--crlf", action="store_true", help="split at CRLF")
    args = parser.parse_args(argv)
    print(len(split_lines(sys.stdin.read(), args.crlf)))
`)
	MustWriteFile(t, filepath.Join(repo, "tests", "test_lines.py"), `import argparse

from lines import main, split_lines


def test_split():
    assert split_lines("a\nb") == ["a", "b"]


def test_crlf(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("a\r\nb"))
    main(["--crlf"])
    assert capsys.readouterr().out == "2\n"


def test_callable():
    assert callable(split_lines)


def test_parser_for_tests():
    p = argparse.ArgumentParser()
    p.add_argument("--crlf")
`)
	MustRun(t, repo, "git", "init", "-q")
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lines")
	te := MustEngine(t, repo)
	def := lineWith(t, repo, "lines.py", `    parser.add_argument("--crlf"`)
	for _, name := range []string{"--crlf", "crlf"} {
		res := te.checkVerdict(t, locProposal("cli_option", name, "lines.py", def, def), "certified", "the add_argument call")
		if res.Level != "ast" {
			t.Errorf("%s: level %s", name, res.Level)
		}
	}
	te.checkVerdict(t, locProposal("cli_option", "--crlf", "lines.py", def-1, def+2), "certified", "the lines around it, in main")
	te.checkVerdict(t, locProposal("cli_option", "-h", "lines.py", def-1, def-1), "certified", "argparse's own help")
	use := lineWith(t, repo, "tests/test_lines.py", `    main(["--crlf"])`)
	te.checkVerdict(t, locProposal("cli_option", "--crlf", "tests/test_lines.py", use, use), "rejected", "a string equal to the name is a use")
	inTest := lineWith(t, repo, "tests/test_lines.py", `    p.add_argument("--crlf")`)
	te.checkVerdict(t, locProposal("cli_option", "--crlf", "tests/test_lines.py", inTest, inTest), "rejected", "in a test file, for tests only")
	te.checkVerdict(t, locProposal("cli_option", "--lf", "lines.py", def, def), "rejected", "is not defined in lines.py")
	te.checkVerdict(t, locProposal("cli_option", "--crlf", "lines.py", 5, 6), "rejected", "is not defined in lines.py:5-6")
}

// TestValidate_PythonOptionsLyingInterpreter: what the interpreter says
// about options is checked against the source, as its declarations are.
func TestValidate_PythonOptionsLyingInterpreter(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "cli")
	MustWriteFile(t, filepath.Join(repo, "cli.py"), "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--real')\nprint('--forged')\nx = 'HOME'\n")
	MustRun(t, repo, "git", "init", "-q")
	liar := filepath.Join(t.TempDir(), "python3")
	for _, c := range []struct{ subject, kind, option string }{
		{"--forged", "cli_option", `{"kind":"flag","names":["--forged"],"api":"argparse","line":4,"start":4,"end":4,"outer":[4,4]}`},
		{"--made-up", "cli_option", `{"kind":"flag","names":["--made-up"],"api":"argparse","line":3,"start":3,"end":3,"outer":[3,3]}`},
		{"HOME", "configuration_key", `{"kind":"env","names":["HOME"],"api":"os","line":5,"start":5,"end":5,"outer":[5,5]}`},
		{"--x", "cli_option", `{"kind":"flag","names":["--x"],"api":"typer","line":5,"start":5,"end":5,"outer":[5,5],"derived":true}`},
	} {
		out := `{"python":"3.11.2","decls":[],"options":[` + c.option + `]}`
		MustWriteFile(t, liar, "#!/bin/sh\ncat >/dev/null\nprintf '%s' '"+out+"'\n")
		if err := os.Chmod(liar, 0o755); err != nil {
			t.Fatal(err)
		}
		te := MustEngine(t, repo, func(cf *Config) { cf.Tests.Python = liar })
		line := map[string]int{"--forged": 4, "--made-up": 3, "HOME": 5, "--x": 5}[c.subject]
		te.checkVerdict(t, locProposal(c.kind, c.subject, "cli.py", line, line), "undecided", "does not match the source")
	}
}
