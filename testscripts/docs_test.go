package testscripts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
)

// The README and docs/ hold their examples to the code (issue 25 item 8,
// finding P1: an example citing lines of the product's own source went
// stale when they moved). Every fenced sh or console block is run, in a
// scratch HOME with a git repository of the grepx fixture as the working
// directory and needle and codex on PATH, unless an HTML comment just before
// it says why not:
//
//	<!-- docs: not run: REASON -->   checked, not run
//	<!-- docs: pending: REASON -->   as not run, but a needle command or flag
//	                                  that does not exist yet is only logged
//	<!-- docs: expect REGEXP -->     (one a line) what a run must print
//
// Every block, run or not, and every text block is checked line by line: a
// needle line names a command `needle help` knows and only flags its help
// documents; a needlebench line a command and flags of `needlebench --help`;
// a codex line flags its --help documents; a make line existing Makefile
// targets; a go install a package of this module. Relative links must
// resolve, anchors included.

// readmeMaxLines is the front door's length budget (finding P11).
const readmeMaxLines = 250

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file    string // path, for messages
	line    int    // 1-based line of its first content line
	lang    string
	text    string
	notRun  string // the reason it is not run ("" runs it)
	pending bool   // commands or flags it names may not exist yet
	expects []string
}

// mdDoc is a parsed Markdown file: its code blocks, links and anchors.
type mdDoc struct {
	path    string
	blocks  []docBlock
	links   []string
	anchors map[string]bool
}

func TestDocs(t *testing.T) {
	chk := newDocChecker(t)
	for _, path := range docFiles(t) {
		doc := parseDoc(t, path)
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, err := range checkLinks(doc) {
				t.Error(err)
			}
			for _, b := range doc.blocks {
				t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
					if err := chk.checkBlock(t, b); err != nil {
						t.Errorf("%s:%d: %v", b.file, b.line, err)
					}
				})
			}
		})
	}
}

func TestDocs_READMEIsShort(t *testing.T) {
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d: move reference material to docs/", n, readmeMaxLines)
	}
}

// TestDocs_StaleExamplesFail feeds the checker examples that have gone
// stale and requires each to fail: P1's example (lines of the product's
// own compile.go, which moved), a flag needle does not have, a Makefile
// target that does not exist, a dead link.
func TestDocs_StaleExamplesFail(t *testing.T) {
	chk := newDocChecker(t)
	stale := map[string]string{
		"p1": "```sh\nneedle evidence propose --repository . --data-dir ~/.needle \\\n" +
			`  <(echo '{"kind":"implementation_location","subject":{"kind":"symbol","name":"Compile"},"path":"./product/compile.go","start_line":114,"end_line":140}')` + "\n```\n",
		"flag":   "<!-- docs: not run: example -->\n```sh\nneedle need resolve --no-such-flag x.json\n```\n",
		"cmd":    "<!-- docs: not run: example -->\n```sh\nneedle frobnicate --data-dir d\n```\n",
		"make":   "<!-- docs: not run: example -->\n```sh\nmake no-such-target\n```\n",
		"config": "```toml\n[mcp_servers.needle]\ncommand = \"needle\"\nargs = [\"mcp\", \"serve\", \"--data-dir\", \"d\", \"--role\", \"x\"]\n```\n",
		"expect": "<!-- docs: expect \"kind\": \"exact_hit\" -->\n```sh\nneedle version\n```\n",
	}
	for name, md := range stale {
		path := filepath.Join(t.TempDir(), name+".md")
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		doc := parseDoc(t, path)
		if len(doc.blocks) != 1 {
			t.Fatalf("%s: %d blocks, want 1", name, len(doc.blocks))
		}
		err := chk.checkBlock(t, doc.blocks[0])
		if err == nil {
			t.Errorf("%s: a stale example passed:\n%s", name, md)
			continue
		}
		t.Logf("%s fails as it should: %.300s", name, err)
	}
	dead := &mdDoc{path: "../README.md", links: []string{"docs/no-such.md", "docs/cli.md#no-such-heading"}}
	if errs := checkLinks(dead); len(errs) != 2 {
		t.Errorf("dead links: %v, want 2 errors", errs)
	}
}

// docFiles lists README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"../README.md"}, files...)
}

var docDirective = regexp.MustCompile(`(?m)^\s*(?:<!--)?\s*docs:\s*(not run|pending|expect)\b:?\s*(.*?)\s*(?:-->)?\s*$`)

// parseDoc reads a Markdown file's code blocks, with the directives of
// the HTML comment just before each, its links and its heading anchors.
func parseDoc(t *testing.T, path string) *mdDoc {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := &mdDoc{path: path, anchors: map[string]bool{}}
	root := goldmark.New().Parser().Parse(gmtext.NewReader(src))
	ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			doc.blocks = append(doc.blocks, newDocBlock(path, src, n))
		case *ast.Link:
			doc.links = append(doc.links, string(n.Destination))
		case *ast.Heading:
			doc.anchors[slug(string(n.Lines().Value(src)))] = true
		}
		return ast.WalkContinue, nil
	})
	return doc
}

func newDocBlock(path string, src []byte, n *ast.FencedCodeBlock) docBlock {
	b := docBlock{file: path, lang: string(n.Language(src)), text: string(n.Lines().Value(src))}
	if n.Lines().Len() > 0 {
		b.line = bytes.Count(src[:n.Lines().At(0).Start], []byte("\n")) + 1
	}
	var comment string
	for prev, ok := n.PreviousSibling().(*ast.HTMLBlock); ok; prev, ok = prev.PreviousSibling().(*ast.HTMLBlock) {
		comment += string(prev.Lines().Value(src)) + "\n"
		if prev.HasClosure() {
			comment += string(prev.ClosureLine.Value(src)) + "\n"
		}
	}
	for _, m := range docDirective.FindAllStringSubmatch(comment, -1) {
		switch m[1] {
		case "not run":
			b.notRun = m[2]
		case "pending":
			b.notRun, b.pending = m[2], true
		case "expect":
			b.expects = append(b.expects, m[2])
		}
	}
	return b
}

// slug is GitHub's anchor of a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks reports relative links of doc whose file or anchor is missing.
func checkLinks(doc *mdDoc) []error {
	var errs []error
	for _, l := range doc.links {
		if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(l, "#")
		target := doc.path
		if file != "" {
			target = filepath.Join(filepath.Dir(doc.path), file)
			if _, err := os.Stat(target); err != nil {
				errs = append(errs, fmt.Errorf("%s: link %q: %v", doc.path, l, err))
				continue
			}
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(target, ".md") || !anchorsOf(target)[anchor] {
			errs = append(errs, fmt.Errorf("%s: link %q: no heading with anchor #%s in %s", doc.path, l, anchor, target))
		}
	}
	return errs
}

func anchorsOf(path string) map[string]bool {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	anchors := map[string]bool{}
	ast.Walk(goldmark.New().Parser().Parse(gmtext.NewReader(src)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			anchors[slug(string(h.Lines().Value(src)))] = true
		}
		return ast.WalkContinue, nil
	})
	return anchors
}

// docChecker checks blocks against the real commands: help texts are
// asked of real needle, needlebench and codex processes, and cached.
type docChecker struct {
	codex   string
	binDir  string // holds codex, for the blocks that run it
	help    map[string]helpText
	targets map[string]bool
	module  string
}

type helpText struct {
	text string
	ok   bool
}

func newDocChecker(t *testing.T) *docChecker {
	t.Helper()
	c := &docChecker{codex: testenv.Codex(t), binDir: t.TempDir(), help: map[string]helpText{}, targets: map[string]bool{}}
	if err := os.Symlink(c.codex, filepath.Join(c.binDir, "codex")); err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_-]+):`).FindAllStringSubmatch(string(mk), -1) {
		c.targets[m[1]] = true
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	c.module = regexp.MustCompile(`(?m)^module (\S+)`).FindStringSubmatch(string(gomod))[1]
	return c
}

// checkBlock checks every command line of b and runs b unless it is
// marked not to be run.
func (c *docChecker) checkBlock(t *testing.T, b docBlock) error {
	var lines []string
	switch b.lang {
	case "sh", "console", "text":
		lines = commandLines(b)
	case "toml", "json":
		lines = configuredCommands(b.text)
	default:
		return nil
	}
	var errs []error
	for _, line := range lines {
		if err := c.checkLine(line); err != nil {
			if b.pending {
				t.Logf("%s:%d: pending: %v", b.file, b.line, err)
				continue
			}
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && b.notRun == "" && (b.lang == "sh" || b.lang == "console") {
		errs = append(errs, c.run(t, b))
	}
	return errors.Join(errs...)
}

// commandLines returns the shell commands of a block: continuation lines
// joined, comments and heredoc bodies dropped, split at && || | and ;. A
// console block's commands are its "$ " lines.
func commandLines(b docBlock) []string {
	var out []string
	heredoc := ""
	var cur string
	for _, line := range strings.Split(b.text, "\n") {
		if heredoc != "" {
			if strings.TrimSpace(line) == heredoc {
				heredoc = ""
			}
			continue
		}
		if b.lang == "console" && cur == "" {
			var ok bool
			if line, ok = strings.CutPrefix(line, "$ "); !ok {
				continue
			}
		}
		if m := regexp.MustCompile(`<<-?'?"?(\w+)`).FindStringSubmatch(line); m != nil {
			heredoc = m[1]
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		out = append(out, shellSegments(cur+line)...)
		cur = ""
	}
	return out
}

var (
	configCommand = regexp.MustCompile(`"?command"?\s*[:=]\s*"needle"[\s,]*"?args"?\s*[:=]\s*\[([^\]]*)\]`)
	configString  = regexp.MustCompile(`"([^"]*)"`)
)

// configuredCommands returns the needle command lines a client
// configuration (Codex's TOML, Claude Code's .mcp.json) registers.
func configuredCommands(text string) []string {
	var lines []string
	for _, m := range configCommand.FindAllStringSubmatch(text, -1) {
		line := "needle"
		for _, a := range configString.FindAllStringSubmatch(m[1], -1) {
			line += " " + a[1]
		}
		lines = append(lines, line)
	}
	return lines
}

// shellSegments drops a comment and splits a line at && || | ;, outside
// quotes; quoted text is replaced by Q so that a prompt's words are never
// read as flags.
func shellSegments(line string) []string {
	var segs []string
	var b strings.Builder
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
			b.WriteString("Q")
		case r == '#' && (prev == ' ' || prev == '\t' || i == 0):
			return append(segs, b.String())
		case r == '|' || r == ';' || r == '&':
			if r == '&' && !strings.HasPrefix(line[i:], "&&") && prev != '&' {
				b.WriteRune(r)
				break
			}
			segs = append(segs, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return append(segs, b.String())
}

var flagWord = regexp.MustCompile(`^[\[(]?(--?[A-Za-z][A-Za-z0-9-]*)`)

// flagsOf returns the flags among words (a word may list several: [--a|--b]).
func flagsOf(words []string) []string {
	var flags []string
	for _, w := range words {
		for _, part := range strings.Split(w, "|") {
			if m := flagWord.FindStringSubmatch(part); m != nil && m[1] != "-h" && m[1] != "--help" {
				flags = append(flags, m[1])
			}
		}
	}
	return flags
}

// checkLine checks one shell command against what it names.
func (c *docChecker) checkLine(line string) error {
	words := strings.Fields(line)
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	switch words[0] {
	case "needle":
		return c.checkHelped("needle", words[1:], []string{"help"}, nil)
	case "codex":
		before, server, _ := strings.Cut(strings.Join(words[1:], " "), " -- ")
		if err := c.checkHelped(c.codex, strings.Fields(before), nil, []string{"--help"}); err != nil {
			return err
		}
		return c.checkLine(server) // the MCP server command it registers
	case "needlebench":
		return c.checkNeedlebench(words[1:])
	case "make":
		return c.checkMake(words[1:])
	case "go":
		return c.checkGo(words[1:])
	}
	return nil
}

// checkHelped finds the longest command prefix of args whose help exits 0
// and requires every flag of args to appear in that help.
func (c *docChecker) checkHelped(bin string, args, pre, post []string) error {
	var cmd []string
	for _, w := range args {
		if !regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(w) || len(cmd) == 3 {
			break
		}
		cmd = append(cmd, w)
	}
	name := filepath.Base(bin)
	if name == "needle" && len(cmd) > 0 && cmd[0] == "help" {
		if len(args) == 1 || strings.HasPrefix(args[1], "[") {
			return nil
		}
		return c.checkHelped(bin, args[1:], pre, post) // needle help COMMAND names a command
	}
	for n := len(cmd); n >= 0; n-- {
		h := c.helpOf(bin, append(append(append([]string{}, pre...), cmd[:n]...), post...))
		if !h.ok {
			continue
		}
		if n == 0 && len(cmd) > 0 && name == "needle" {
			return fmt.Errorf("needle %s: no such command (needle help knows none of %q)", strings.Join(args, " "), cmd)
		}
		for _, f := range flagsOf(args[n:]) {
			if !mentions(h.text, f) {
				return fmt.Errorf("%s %s: flag %s is not in `%s help %s`", name, strings.Join(args, " "), f, name, strings.Join(cmd[:n], " "))
			}
		}
		return nil
	}
	return fmt.Errorf("%s %s: no help for it", name, strings.Join(args, " "))
}

func mentions(help, flag string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(flag) + `($|[^A-Za-z0-9-])`).MatchString(help)
}

// helpOf runs bin with args (a help request) and caches its output.
func (c *docChecker) helpOf(bin string, args []string) helpText {
	key := bin + "\x00" + strings.Join(args, "\x00")
	if h, ok := c.help[key]; ok {
		return h
	}
	if bin == "needle" && len(args) == 1 && args[0] == "help" {
		args = []string{"--help"}
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	h := helpText{text: string(out), ok: err == nil}
	c.help[key] = h
	return h
}

func (c *docChecker) checkNeedlebench(args []string) error {
	h := c.helpOf("needlebench", []string{"--help"})
	if len(args) > 0 && !regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(args[0])+`\b`).MatchString(h.text) {
		return fmt.Errorf("needlebench %s: no such command in needlebench --help", strings.Join(args, " "))
	}
	for _, f := range flagsOf(args) {
		if !mentions(h.text, f) {
			return fmt.Errorf("needlebench %s: flag %s is not in needlebench --help", strings.Join(args, " "), f)
		}
	}
	return nil
}

func (c *docChecker) checkMake(args []string) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && !c.targets[a] {
			return fmt.Errorf("make %s: the Makefile has no target %q", strings.Join(args, " "), a)
		}
	}
	return nil
}

// checkGo requires the packages a go install or build names to be this
// module's.
func (c *docChecker) checkGo(args []string) error {
	if len(args) == 0 || args[0] != "install" && args[0] != "build" {
		return nil
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		pkg, _, _ := strings.Cut(a, "@")
		rel, ok := strings.CutPrefix(pkg, c.module+"/")
		if !ok {
			rel, ok = strings.CutPrefix(pkg, "./")
		}
		rel = strings.TrimSuffix(strings.TrimSuffix(rel, "..."), "/")
		if _, err := os.Stat(filepath.Join("..", rel)); !ok || err != nil {
			return fmt.Errorf("go %s: %s is not a package of %s", strings.Join(args, " "), a, c.module)
		}
	}
	return nil
}

// run runs a block with bash (errexit, pipefail) in a fresh HOME, in a git
// repository of the grepx fixture, and checks its expectations.
func (c *docChecker) run(t *testing.T, b docBlock) error {
	t.Helper()
	dir := t.TempDir()
	home, repo := filepath.Join(dir, "home"), filepath.Join(dir, "repo")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	if err := gitFixture(repo); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+b.text)
	cmd.Dir, cmd.Env = repo, docEnv(home, c.binDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the block failed (%v):\n%s\n--- its output:\n%s", err, b.text, out)
	}
	for _, re := range b.expects {
		if !regexp.MustCompile(re).Match(out) {
			return fmt.Errorf("the block's output has no match for %q:\n%s", re, out)
		}
	}
	return nil
}

// docEnv is the blocks' environment: the caller's, with a fresh HOME and
// nothing of a user's Needle or Codex set-up.
func docEnv(home, binDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "PATH", k == "CODEX_HOME", strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "NEEDLE_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// gitFixture writes the grepx fixture into dir and commits it.
func gitFixture(dir string) error {
	ar, err := txtar.ParseFile("../fixtures/repos/grepx.txtar")
	if err != nil {
		return err
	}
	for _, f := range ar.Files {
		name := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, f.Data, 0o644); err != nil {
			return err
		}
	}
	git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.name=docs -c user.email=docs@example.com commit -qm fixture")
	git.Dir = dir
	if out, err := git.CombinedOutput(); err != nil {
		return fmt.Errorf("git fixture: %v: %s", err, out)
	}
	return nil
}
