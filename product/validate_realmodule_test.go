package product

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Real third-party modules the validators are tested on, fetched through
// the module proxy and pinned by their go.sum hashes (never committed).
// Their own dependencies are pinned by the lines of their go.sum, which
// the pinned hash covers.
var pinnedModules = map[string]string{
	"github.com/urfave/cli/v2@v2.27.7":        "h1:bH59vdhbjLv3LAvIu6gd0usJHgoTTPhCFib8qqOwXYU=",
	"github.com/alecthomas/kingpin/v2@v2.4.0": "h1:f48lwail6p8zpO1bC4TxtqACaGqHYA22qkHjHpqDjYY=",
	"github.com/spf13/cobra@v1.9.1":           "h1:CXSaggrXdbHK9CF+8ywj8Amf7PBRmPCOJugH954Nnlo=",
	"github.com/alecthomas/kong@v1.17.0":      "h1:f52BVWChYMDkMkCoqkEWRuFOk/K4B5LO7xIijeLJRdk=",
}

// goModDownload runs go mod download -json in dir and decodes its stream.
func goModDownload(tb testing.TB, dir string, args ...string) []struct{ Path, Version, Sum, GoModSum, Dir, Error string } {
	tb.Helper()
	cmd := exec.Command("go", append([]string{"mod", "download", "-json"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var mods []struct{ Path, Version, Sum, GoModSum, Dir, Error string }
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, Sum, GoModSum, Dir, Error string }
		if derr := dec.Decode(&m); errors.Is(derr, io.EOF) {
			break
		} else if derr != nil {
			tb.Fatalf("go mod download %v in %s: %v\n%s", args, dir, derr, stderr.Bytes())
		}
		if m.Error != "" {
			tb.Fatalf("go mod download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		mods = append(mods, m)
	}
	if err != nil {
		tb.Fatalf("go mod download %v in %s: %v\n%s", args, dir, err, stderr.Bytes())
	}
	return mods
}

// MustRealRepo downloads module@version (pinned in pinnedModules), copies
// it into a new git repository with one commit, and downloads what its
// packages and tests need into the module cache, each module checked
// against the module's own go.sum: the sandboxed runs fetch nothing.
func MustRealRepo(tb testing.TB, modVersion string) string {
	tb.Helper()
	sum, ok := pinnedModules[modVersion]
	if !ok {
		tb.Fatalf("%s is not pinned", modVersion)
	}
	mods := goModDownload(tb, tb.TempDir(), modVersion)
	if len(mods) != 1 || mods[0].Sum != sum {
		tb.Fatalf("%s: the proxy served %+v, pinned %s", modVersion, mods, sum)
	}
	repo := filepath.Join(tb.TempDir(), strings.NewReplacer("/", "_", "@", "_").Replace(modVersion))
	err := filepath.WalkDir(mods[0].Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mods[0].Dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(repo, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(repo, rel), data, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	pins := map[string]bool{}
	if f, err := os.Open(filepath.Join(repo, "go.sum")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			pins[strings.TrimSpace(sc.Text())] = true
		}
		f.Close()
	}
	for _, m := range goModDownload(tb, repo) {
		if m.Sum != "" && !pins[m.Path+" "+m.Version+" "+m.Sum] || m.GoModSum != "" && !pins[m.Path+" "+m.Version+"/go.mod "+m.GoModSum] {
			tb.Fatalf("%s: the dependency %s@%s (%s, go.mod %s) is not pinned by its go.sum", modVersion, m.Path, m.Version, m.Sum, m.GoModSum)
		}
	}
	MustRun(tb, repo, "git", "init", "-q")
	MustRun(tb, repo, "git", "add", "-A")
	MustRun(tb, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", modVersion)
	return repo
}

// TestValidate_RealReadThroughNames: urfave/cli v2.27.7 reads --help only
// in checkHelp, through a loop over HelpFlag.Names(). A real test of
// urfave that runs its app with --help executes that read and is
// certified executed; a real test that never runs an app, and never
// passes --help, executes no read of it and is rejected.
func TestValidate_RealReadThroughNames(t *testing.T) {
	repo := MustRealRepo(t, "github.com/urfave/cli/v2@v2.27.7")
	te := MustEngine(t, repo)
	tests := func(file, name string) string {
		return `{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--help"},"tests":[{"path":"` + file + `","name":"` + name + `"}]}`
	}
	res := te.checkVerdict(t, tests("help_test.go", "Test_helpCommand_InHelpOutput"), "certified", "a test running the app with --help")
	if res.Status == "certified" {
		read := lineWith(t, repo, "help.go", "for _, name := range HelpFlag.Names() {") + 1 // if cCtx.Bool(name) {
		body := te.certificateBody(t, res.CertificateID)
		if !strings.Contains(body, `"reach":"executed"`) || !strings.Contains(body, "help.go line "+strconv.Itoa(read)) {
			t.Errorf("the certificate does not say the test executed the read at help.go:%d: %s", read, body)
		}
	}
	te.checkVerdict(t, tests("flag_test.go", "TestBoolFlagHelpOutput"), "rejected", "executed no read of cli_option \"--help\"'s value")
}
