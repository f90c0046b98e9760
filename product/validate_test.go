package product

import (
	"bufio"
	"context"
	"fmt"
	"github.com/needle-dev/needle/product/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The validator tests judge proposals about the module in
// testdata/evidence/cli.txtar, one case of every class of true and false
// evidence. Their oracle is the fixture's text, read here with plain
// string search (lineOf, declLines), never the validators' own code.

// MustEvidenceRepo writes testdata/evidence/cli.txtar into a new directory,
// replacing each key of subst in every file, and commits it when git is
// set.
func MustEvidenceRepo(tb testing.TB, git bool, subst map[string]string) string {
	tb.Helper()
	return MustEvidenceFixture(tb, "cli", git, subst)
}

// MustEvidenceFixture writes testdata/evidence/NAME.txtar into a new directory
// (a git repository with one commit when git is set), with the strings of
// subst replaced, and returns it.
func MustEvidenceFixture(tb testing.TB, name string, git bool, subst map[string]string) string {
	tb.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", "evidence", name+".txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(tb.TempDir(), name)
	for _, f := range ar.Files {
		data := string(f.Data)
		for k, v := range subst {
			data = strings.ReplaceAll(data, k, v)
		}
		MustWriteFile(tb, filepath.Join(dir, f.Name), data)
	}
	if git {
		MustRun(tb, dir, "git", "init", "-q")
		MustRun(tb, dir, "git", "add", "-A")
		MustRun(tb, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture")
	}
	return dir
}

// lineWith returns the 1-based line of the first line of file holding text.
func lineWith(tb testing.TB, repo, file, text string) int {
	tb.Helper()
	f, err := os.Open(filepath.Join(repo, filepath.FromSlash(file)))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), text) {
			return n
		}
	}
	tb.Fatalf("%s holds no line with %q", file, text)
	return 0
}

// declLines returns the lines of the declaration whose first line holds
// header: its doc comment's first line (the header's own line without
// one), the header's line, and its last line (the first line after it that
// is exactly "}" or ")", or the header's line when it ends the
// declaration itself).
func declLines(tb testing.TB, repo, file, header string) (doc, start, end int) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(file)))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start = lineWith(tb, repo, file, header)
	doc = start
	for doc > 1 && strings.HasPrefix(strings.TrimSpace(lines[doc-2]), "//") {
		doc--
	}
	end = start
	if t := strings.TrimSpace(lines[start-1]); !strings.HasSuffix(t, "}") && !strings.HasSuffix(t, ")") || strings.HasSuffix(t, "{") {
		for end = start + 1; end <= len(lines) && lines[end-1] != "}" && lines[end-1] != ")"; end++ {
		}
	}
	return doc, start, end
}

func locProposal(kind, name, path string, start, end int) string {
	return fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":%q,"name":%q},"path":%q,"start_line":%d,"end_line":%d}`, kind, name, path, start, end)
}

// checkVerdict proposes p and checks the status and, for a rejection, that
// a reason holds want.
func (te *testEngine) checkVerdict(t *testing.T, p, status, want string) ProposeResult {
	t.Helper()
	res := te.propose(p)
	if res.Status != status {
		t.Errorf("%s: %s %v %v; want %s\n%s", want, res.Status, res.Reasons, res.Undecided, status, p)
		return res
	}
	if status == "rejected" && !strings.Contains(strings.Join(res.Reasons, "\n"), want) {
		t.Errorf("reasons %q lack %q", res.Reasons, want)
	}
	if status == "undecided" && !strings.Contains(strings.Join(res.Undecided, "\n"), want) {
		t.Errorf("undecided causes %q lack %q", res.Undecided, want)
	}
	t.Logf("%s: %s %q %q", want, res.Status, res.Reasons, res.Undecided)
	return res
}

// proposedPath returns the path of the artifact a result certified.
func (te *testEngine) artifactBody(t *testing.T, id string) string {
	t.Helper()
	var body string
	if err := te.store.db.QueryRow(`SELECT body FROM artifacts WHERE artifact_id = ?`, id).Scan(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

// TestValidate_Paths: evidence cites the snapshot by the file's own path.
// "./x.go" is cleaned; a path leaving the repository is invalid input; a
// symlink (to an ignored file, into .git, out of the repository, to a
// directory or even to a tracked file), an ignored file, .git, a file past
// maxCitedFileBytes and a name the file system refuses are each rejected
// with a reason and recorded, and nothing of such a file is stored.
func TestValidate_Paths(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	MustWriteFile(t, filepath.Join(repo, ".gitignore"), "secret.env\n*.log\n")
	MustWriteFile(t, filepath.Join(repo, "secret.env"), "API_KEY=sk-live-4f9c2\n")
	MustWriteFile(t, filepath.Join(repo, "run.log"), "API_KEY=sk-log-77\n")
	MustWriteFile(t, filepath.Join(filepath.Dir(repo), "outside.go"), "package outside\n\nfunc Secret() {}\n")
	MustWriteFile(t, filepath.Join(repo, "nested", "a.go"), "package nested\n\nfunc Open() {}\n")
	for link, target := range map[string]string{
		"config.env": "secret.env", "gitcfg": ".git/config", "nested/key.env": "../secret.env",
		"escape.go": "../outside.go", "alias.go": "search.go", "linkdir": "nested",
	} {
		if err := os.Symlink(target, filepath.Join(repo, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	MustRun(t, repo, "git", "init", "-q")
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture")
	big := filepath.Join(repo, "big.go")
	MustWriteFile(t, big, "package main\n\nfunc Big() {}\n")
	if err := os.Truncate(big, 64<<20); err != nil { // sparse: nothing on disk
		t.Fatal(err)
	}
	te := MustEngine(t, repo)
	key := func(path string) string { return locProposal("configuration_key", "API_KEY", path, 1, 1) }
	long := strings.Repeat("n", 300) + ".go"
	for _, c := range []struct{ p, why string }{
		{key("config.env"), `goes through the symbolic link "config.env"`},
		{key("nested/key.env"), `goes through the symbolic link "nested/key.env"`},
		{locProposal("configuration_key", "repositoryformatversion", "gitcfg", 2, 2), `goes through the symbolic link "gitcfg"`},
		{locProposal("symbol", "Secret", "escape.go", 3, 3), "escapes the repository"},
		{locProposal("symbol", "NewSearcher", "alias.go", 15, 17), `goes through the symbolic link "alias.go"`},
		{locProposal("symbol", "Open", "linkdir/a.go", 3, 3), `goes through the symbolic link "linkdir"`},
		{key("secret.env"), "is not in the snapshot"},
		{key("run.log"), "is not in the snapshot"},
		{locProposal("configuration_key", "repositoryformatversion", ".git/config", 2, 2), "is not in the snapshot"},
		{locProposal("symbol", "Big", "big.go", 3, 3), "big.go is 67108864 bytes; cited files are limited to 8388608 bytes"},
		{locProposal("symbol", "Open", long, 3, 3), "cannot be read"},
		{locProposal("symbol", "Open", "missing.go", 3, 3), `file "missing.go" does not exist`},
		{locProposal("symbol", "NewSearcher", "nested", 1, 1), "is not a regular file"},
	} {
		te.checkVerdict(t, c.p, "rejected", c.why)
	}
	if n := te.count(t, `SELECT count(*) FROM attempts WHERE status = 'rejected'`); n != 13 {
		t.Errorf("%d rejected attempts recorded; want 13", n)
	}
	if text := te.storeText(t); strings.Contains(text, "sk-live") || strings.Contains(text, "sk-log") || strings.Contains(text, "repositoryformatversion = ") {
		t.Error("the store holds text of an ignored file or of .git")
	}
	// The schema allows any string as a path: one that leaves the
	// repository decodes, and is rejected before anything is read.
	for _, p := range []string{"../outside.go", "/etc/passwd", "a/../../x.go", "..", "dir/"} {
		te.checkVerdict(t, locProposal("symbol", "X", p, 1, 1), "rejected", "path")
	}
	for in, want := range map[string]string{"./search.go": "search.go", "a//b.go": "a/b.go", "a/./b.go": "a/b.go", "a/x/../b.go": "a/b.go"} {
		p, err := decodeProposal([]byte(locProposal("symbol", "X", in, 1, 1)))
		if err != nil || p.Path != want {
			t.Errorf("path %q decodes to %q, %v; want %q", in, p.Path, err, want)
		}
	}
}

// TestValidate_SubdirectoryRepository: a repository opened at a
// subdirectory of a work tree keeps the whole work tree's ignore rules, and
// one whose .git git cannot read does not open at all.
func TestValidate_SubdirectoryRepository(t *testing.T) {
	repo := MustEvidenceRepo(t, false, nil)
	top := filepath.Dir(repo)
	MustWriteFile(t, filepath.Join(top, ".gitignore"), "*.env\n")
	MustRun(t, top, "git", "init", "-q")
	MustRun(t, top, "git", "add", "-A")
	MustRun(t, top, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture")
	MustWriteFile(t, filepath.Join(repo, "local.env"), "TOKEN=tok-77\n")
	te := MustEngine(t, repo)
	te.checkVerdict(t, locProposal("configuration_key", "TOKEN", "local.env", 1, 1), "rejected", "is not in the snapshot")
	_, s, e := declLines(t, repo, "command.go", "func (c *Command) Run(")
	te.checkVerdict(t, locProposal("symbol", "Command.Run", "command.go", s, e), "certified", "Go below the top level")
	if strings.Contains(te.storeText(t), "tok-77") {
		t.Error("the store holds text of an ignored file")
	}
	// Open decides in the background whether the root is a work tree
	// (snapshot.OpenAsync): a .git git cannot read fails Open or, at the
	// latest, the first use of the repository.
	MustWriteFile(t, filepath.Join(top, ".git", "HEAD"), "garbage\n")
	ctx := context.Background()
	eng, err := Open(ctx, Config{DataDir: t.TempDir(), Repository: repo})
	if err == nil {
		defer eng.Close()
		var res ProposeResult
		if res, err = eng.Propose(ctx, []byte(locProposal("symbol", "Command.Run", "command.go", s, e))); err == nil {
			t.Errorf("a work tree whose .git git cannot read was used (its ignore rules would be dropped): %s %v", res.Status, res.Reasons)
		}
	}
	t.Logf("refused: %v", err)
}

// TestValidate_OversizedDependency: a dependency that grows past the bound
// is stale, never hashed whole and never served.
func TestValidate_OversizedDependency(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locNewSearcher)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	if err := os.Truncate(filepath.Join(repo, "search.go"), 64<<20); err != nil {
		t.Fatal(err)
	}
	if r := te.need(needLocateNewSearcher); r.Status == "hit" {
		t.Errorf("evidence served from a file past the bound:\n%s", r.Context)
	}
}

// certificateBody returns the body of a certificate.
func (te *testEngine) certificateBody(t *testing.T, id string) string {
	t.Helper()
	var body string
	if err := te.store.db.QueryRow(`SELECT body FROM certificates WHERE certificate_id = ?`, id).Scan(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

// count runs a counting query on the engine's store.
func (te *testEngine) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := te.store.db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// storeText is every text value of the engine's store, joined.
func (te *testEngine) storeText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, v := range testenv.Values(t, te.store.db) {
		fmt.Fprintf(&b, "%v\n", v)
		if raw, ok := v.([]byte); ok {
			b.Write(raw)
		}
	}
	return b.String()
}
