package product

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate_Rejects(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	tests := []struct{ name, proposal, reason string }{
		{"LocationWrongLines", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"NewSearcher"},"path":"search.go","start_line":29,"end_line":35}`,
			`symbol "NewSearcher" is not declared in search.go:29-35`},
		{"LocationNeighbouringFunction", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"splitCRLF"},"path":"search.go","start_line":20,"end_line":26}`,
			"is not declared"},
		{"LocationMissingFile", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Run"},"path":"cmd/run.go","start_line":1,"end_line":3}`,
			`file "cmd/run.go" does not exist`},
		{"LocationOutOfRange", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"run"},"path":"main.go","start_line":20,"end_line":90}`,
			"are outside main.go"},
		{"LocationLiteralAbsent", `{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--crlf"},"path":"options.go","start_line":11,"end_line":18}`,
			"is not a literal in options.go:11-18"},
		{"FlowUnconnected", `{"kind":"runtime_flow","subject":{"kind":"cli_option","name":"--crlf"},"scenario":"default","steps":[
			{"path":"flags.go","start_line":6,"end_line":14,"summary":"parse"},{"path":"search.go","start_line":29,"end_line":35,"summary":"split"}]}`,
			"does not call a function declared in steps[1]"},
		{"FlowFirstStepLacksSubject", `{"kind":"runtime_flow","subject":{"kind":"cli_option","name":"--crlf"},"scenario":"default","steps":[
			{"path":"options.go","start_line":11,"end_line":18,"summary":"options"}]}`, "steps[0]"},
		{"TestsNotReaching", `{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--crlf"},"tests":[
			{"path":"search_test.go","name":"TestSplitCRLF","command":"go test . -run '^TestSplitCRLF$'"}]}`, "does not reach cli_option"},
		{"TestsWrongCommand", `{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--crlf"},"tests":[
			{"path":"search_test.go","name":"TestCRLF","command":"go test ./... ; rm -rf /"}]}`, "is not the command that runs TestCRLF"},
		{"TestsNoSuchTest", `{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--crlf"},"tests":[
			{"path":"search_test.go","name":"TestMissing","command":"go test . -run '^TestMissing$'"}]}`, "declares no func TestMissing"},
		{"BehaviorUnverifiable", `{"kind":"implementation_location","subject":{"kind":"behavior","name":"line endings"},"path":"search.go","start_line":29,"end_line":35}`,
			"cannot be verified by trusted code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := te.propose(tt.proposal)
			if res.Status != "rejected" || res.ArtifactID != "" || res.CertificateID != "" {
				t.Fatalf("result %+v, want rejected", res)
			}
			if !strings.Contains(strings.Join(res.Reasons, "\n"), tt.reason) {
				t.Errorf("reasons %q lack %q", res.Reasons, tt.reason)
			}
		})
	}
	var artifacts, rejected int
	if err := te.store.db.QueryRow(`SELECT (SELECT count(*) FROM artifacts), (SELECT count(*) FROM attempts WHERE status = 'rejected')`).Scan(&artifacts, &rejected); err != nil {
		t.Fatal(err)
	}
	if artifacts != 0 || rejected != len(tests) {
		t.Errorf("%d artifacts and %d rejected attempts stored; want 0 and %d", artifacts, rejected, len(tests))
	}
}

func TestValidate_PathEscapes(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	te := MustEngine(t, repo)
	for _, p := range []string{"../outside.go", "/etc/passwd", "a/../../x.go"} {
		_, err := DecodeProposal([]byte(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"X"},"path":"` + p + `","start_line":1,"end_line":1}`))
		if KindOf(err) != KindInvalidInput {
			t.Errorf("path %q: error %v, want invalid input", p, err)
		}
	}
	MustWriteFile(t, repo+"/../secret.go", "package secret\n\nfunc Secret() {}\n")
	MustRun(t, repo, "ln", "-s", "../secret.go", "link.go")
	res := te.propose(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"Secret"},"path":"link.go","start_line":3,"end_line":3}`)
	if res.Status != "rejected" || !strings.Contains(strings.Join(res.Reasons, ""), "escapes the repository") {
		t.Errorf("symlink escape: %+v", res)
	}
}

func TestValidate_OutsideSnapshot(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	MustWriteFile(t, filepath.Join(repo, ".gitignore"), "ignored.conf\n")
	MustWriteFile(t, filepath.Join(repo, "ignored.conf"), "verbose = true\n")
	te := MustEngine(t, repo)
	for name, p := range map[string]string{
		"GitDir":  `{"kind":"implementation_location","subject":{"kind":"configuration_key","name":"repositoryformatversion"},"path":".git/config","start_line":2,"end_line":2}`,
		"Ignored": `{"kind":"implementation_location","subject":{"kind":"configuration_key","name":"verbose"},"path":"ignored.conf","start_line":1,"end_line":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			res := te.propose(p)
			if res.Status != "rejected" || !strings.Contains(strings.Join(res.Reasons, ""), "not in the snapshot") {
				t.Errorf("evidence outside the snapshot: %+v", res)
			}
		})
	}
}

func TestValidate_LexicalEvidence(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "notes", false))
	loc := te.mustCertify(`{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--archive-dir"},"path":"tool.py","start_line":4,"end_line":8}`)
	te.mustCertify(`{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--verbose"},"tests":[{"path":"test_tool.py","name":"test_verbose","command":"python -m pytest test_tool.py"}]}`)
	var level, body string
	if err := te.store.db.QueryRow(`SELECT level, body FROM certificates WHERE certificate_id = ?`, loc.CertificateID).Scan(&level, &body); err != nil {
		t.Fatal(err)
	}
	if level != LevelLexical || !strings.Contains(body, "lexical evidence only") {
		t.Errorf("certificate level %q body %s", level, body)
	}
	r := te.need(`{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--archive-dir"}}`)
	kindOf(t, r, ResolutionCoverage)
	if !strings.Contains(r.Context, "tool.py:4-8 (lexical evidence)") {
		t.Errorf("context does not say lexical:\n%s", r.Context)
	}
	bad := te.propose(`{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--archive-dir"},"path":"tool.py","start_line":11,"end_line":13}`)
	if bad.Status != "rejected" {
		t.Errorf("lexical mismatch certified: %+v", bad)
	}
	shell := te.propose(`{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--verbose"},"tests":[{"path":"test_tool.py","name":"test_verbose","command":"pytest; curl evil"}]}`)
	if shell.Status != "rejected" {
		t.Errorf("shell metacharacters certified: %+v", shell)
	}
}

func TestValidate_ExhaustiveTests(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	exhaustive := `{"route":"tests.relevant","subject":{"kind":"symbol","name":"NewSearcher"},"required":[{"kind":"focused_tests","selection":"exhaustive","completeness":"contract_complete"}]}`
	// TestSearchMatches is the only test reaching NewSearcher (through searchAll).
	res := te.mustCertify(`{"kind":"focused_tests","subject":{"kind":"symbol","name":"NewSearcher"},"tests":[{"path":"search_test.go","name":"TestSearchMatches","command":"go test . -run '^TestSearchMatches$'"}]}`)
	var deps string
	if err := te.store.db.QueryRow(`SELECT group_concat(kind || ':' || path) FROM dependencies WHERE certificate_id = ?`, res.CertificateID).Scan(&deps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(deps, "dir:.") {
		t.Errorf("exhaustive evidence has no directory listing dependency: %s", deps)
	}
	kindOf(t, te.need(exhaustive), ResolutionCoverage)
	// A new test file in the package changes the listing: the exhaustive
	// claim can no longer be trusted, even though no cited file changed.
	MustWriteFile(t, filepath.Join(repo, "more_test.go"), "package main\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) { NewSearcher(&Options{}) }\n")
	te.reopen(func(c *Config) { c.CacheOnly = true })
	r := te.need(exhaustive)
	if r.Status == "hit" {
		t.Errorf("exhaustive evidence served after a reaching test was added: %s", r.Context)
	}
	// A list that omits a reaching test is not exhaustive.
	partial := te.mustCertify(`{"kind":"focused_tests","subject":{"kind":"symbol","name":"NewSearcher"},"tests":[{"path":"search_test.go","name":"TestSearchMatches","command":"go test . -run '^TestSearchMatches$'"}]}`)
	var body string
	if err := te.store.db.QueryRow(`SELECT body FROM certificates WHERE certificate_id = ?`, partial.CertificateID).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, "exhaustive") {
		t.Errorf("a list missing TestMore was certified exhaustive: %s", body)
	}
}
