package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A corpus is data only: corpus/<name>/manifest.json names the subjects —
// real Go modules at pinned versions with their go.sum h1: hashes and the
// digests of their coverage files — and the pattern mix;
// corpus/<name>/sessions.jsonl holds the sessions, one JSON object per
// line, in the order they are played; corpus/<name>/coverage/ holds what
// each test of each module version executed (coverage.go), and
// corpus/<name>/truth/ the intervention truth of each version (itruth.go),
// both pinned by digest in the manifest. Third-party
// source is never committed: the harness downloads it through the module
// proxy, or, for a Python package, from Debian's mirrors (pysource.go).

// CorpusFormat tags the manifest of this version of the corpus format.
const CorpusFormat = "needlebench.corpus/v3"

// Manifest describes a corpus.
type Manifest struct {
	Format    string         `json:"format"`
	Name      string         `json:"name"`
	Seed      uint64         `json:"seed"`
	Generator string         `json:"generator"`
	Subjects  []Subject      `json:"subjects"`
	Patterns  map[string]int `json:"patterns"`
	Wrong     WrongMix       `json:"wrong"`
	Needs     int            `json:"needs"`
	Sessions  int            `json:"sessions"`
	// Judged counts the distinct scripted answers by the class the
	// generator meant them in ("right" or how wrong) and by what the
	// intervention truth says of them.
	Judged map[string]JudgedCounts `json:"judged,omitempty"`
	Notes  []string                `json:"notes"`
}

// JudgedCounts are the truth's verdicts on the answers of one class.
type JudgedCounts struct {
	True     int `json:"true"`
	False    int `json:"false"`
	Unjudged int `json:"unjudged"`
}

// WrongMix counts the scripted worker answers that are wrong, by how.
type WrongMix struct {
	Rate   float64        `json:"rate"` // wrong answers / scripted answers
	Answer int            `json:"answers"`
	Kinds  map[string]int `json:"kinds"`
}

// Subject is a real module and the versions the corpus uses, oldest first.
// Language is "python" for a Python package (Module is its import name),
// "" for a Go module.
type Subject struct {
	Module   string          `json:"module"`
	Language string          `json:"language,omitempty"`
	Versions []ModuleVersion `json:"versions"`
}

// Languages of subjects.
const (
	languageGo     = ""
	languagePython = "python"
)

// ModuleVersion is a pinned version, the hash pinning its source and the
// digests of its coverage data (coverage.go) and of its intervention truth
// (itruth.go). A Go module's Sum is the go.sum hash of its zip. A Python
// package comes from a Debian binary package (Deb; Version is Debian's,
// Sum the sha256: of the .deb file) or from a txtar the project wrote
// (Fixture, a path relative to the corpus directory; Sum the sha256: of
// the file).
type ModuleVersion struct {
	Version  string  `json:"version"`
	Sum      string  `json:"sum"`
	Deb      *DebPin `json:"deb,omitempty"`
	Fixture  string  `json:"fixture,omitempty"`
	Coverage string  `json:"coverage"`
	Truth    string  `json:"truth"`
}

// DebPin names the Debian binary package a Python package version comes
// from: its package name and, when not the machine's own release, the
// suite to fetch it from.
type DebPin struct {
	Package string `json:"package"`
	Suite   string `json:"suite,omitempty"`
}

// Session is one developer's conversation against one module version.
type Session struct {
	ID        string       `json:"id"`
	Developer string       `json:"developer"`
	Module    string       `json:"module"`
	Version   string       `json:"version"`
	Needs     []CorpusNeed `json:"needs"`
}

// CorpusNeed is one need of a session: a JSON request or a @@need marker,
// what pattern it instantiates, and the answers the fake model gives when
// a worker is spawned for it, one per capability kind.
type CorpusNeed struct {
	ID      string                   `json:"id"`
	Pattern string                   `json:"pattern"`
	Request json.RawMessage          `json:"request,omitempty"`
	Marker  string                   `json:"marker,omitempty"`
	Answers map[string]ScriptedReply `json:"answers"`
}

// ScriptedReply is the proposal the fake model answers with, and whether
// (and how) it is wrong by construction.
type ScriptedReply struct {
	Proposal json.RawMessage `json:"proposal"`
	Wrong    string          `json:"wrong,omitempty"` // "" when correct
}

// Corpus is a loaded corpus.
type Corpus struct {
	Dir      string
	Manifest Manifest
	Sessions []Session
	// coverage holds a generated corpus's coverage files (module@version →
	// content) until Write writes them; a loaded corpus reads them when
	// it is played (loadCoverage).
	coverage map[string][]byte
	truth    map[string][]byte // likewise, the truth files
}

// LoadCorpus reads and checks corpus/<name> (or any directory).
func LoadCorpus(dir string) (*Corpus, error) {
	c := &Corpus{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(data, &c.Manifest); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	if c.Manifest.Format != CorpusFormat {
		return nil, fmt.Errorf("%s/manifest.json: format %q, want %q", dir, c.Manifest.Format, CorpusFormat)
	}
	f, err := os.Open(filepath.Join(dir, "sessions.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var s Session
		if err := decodeStrict(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s/sessions.jsonl line %d: %w", dir, n, err)
		}
		c.Sessions = append(c.Sessions, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return c, c.check()
}

// check verifies that each module is one subject (its work tree is played
// and judged by one goroutine), every session names a pinned subject
// version and every need is either a request or a marker.
func (c *Corpus) check() error {
	pinned := map[string]bool{}
	subjects := map[string]bool{}
	for _, s := range c.Manifest.Subjects {
		if subjects[s.Module] {
			return fmt.Errorf("manifest: module %s is a subject twice; list its versions in one subject", s.Module)
		}
		subjects[s.Module] = true
		for _, v := range s.Versions {
			if err := s.checkPin(v); err != nil {
				return fmt.Errorf("manifest: %s@%s: %w", s.Module, v.Version, err)
			}
			pinned[s.Module+"@"+v.Version] = true
		}
	}
	seen := map[string]bool{}
	needs := 0
	for _, s := range c.Sessions {
		if !pinned[s.Module+"@"+s.Version] {
			return fmt.Errorf("session %s: %s@%s is not a subject of the manifest", s.ID, s.Module, s.Version)
		}
		if seen[s.ID] {
			return fmt.Errorf("session %s appears twice", s.ID)
		}
		seen[s.ID] = true
		for _, n := range s.Needs {
			if (len(n.Request) == 0) == (n.Marker == "") {
				return fmt.Errorf("session %s need %s: want exactly one of request and marker", s.ID, n.ID)
			}
			needs++
		}
	}
	if needs != c.Manifest.Needs || len(c.Sessions) != c.Manifest.Sessions {
		return fmt.Errorf("manifest says %d needs in %d sessions, sessions.jsonl has %d in %d", c.Manifest.Needs, c.Manifest.Sessions, needs, len(c.Sessions))
	}
	return nil
}

// checkPin checks that v pins its source as its subject's language does.
func (s Subject) checkPin(v ModuleVersion) error {
	switch s.Language {
	case languageGo:
		if v.Deb != nil || v.Fixture != "" || !strings.HasPrefix(v.Sum, "h1:") {
			return errors.New("a Go module is pinned by its go.sum h1: hash alone")
		}
	case languagePython:
		switch {
		case !sha256Pin.MatchString(v.Sum):
			return fmt.Errorf("a Python package is pinned by the sha256: of its .deb or fixture, not %q", v.Sum)
		case (v.Deb == nil) == (v.Fixture == ""):
			return errors.New("a Python package comes from exactly one of a Debian package (deb) and a fixture")
		case v.Deb != nil && !debName.MatchString(v.Deb.Package):
			return fmt.Errorf("the Debian package name %q", v.Deb.Package)
		case v.Deb != nil && v.Deb.Suite != "" && !debName.MatchString(v.Deb.Suite):
			return fmt.Errorf("the Debian suite %q", v.Deb.Suite)
		case v.Fixture != "" && (!filepath.IsLocal(filepath.FromSlash(v.Fixture)) && !strings.HasPrefix(v.Fixture, "../") || !strings.HasSuffix(v.Fixture, ".txtar")):
			return fmt.Errorf("fixture %q: a .txtar path relative to the corpus directory", v.Fixture)
		case !pyModuleName.MatchString(s.Module):
			return fmt.Errorf("%q is not a Python package's import name", s.Module)
		}
	default:
		return fmt.Errorf("language %q (want python, or none for Go)", s.Language)
	}
	return nil
}

var (
	sha256Pin    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	debName      = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]{0,99}$`)
	pyModuleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,99}$`)
)

// Write writes the corpus into dir.
func (c *Corpus) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m, err := json.MarshalIndent(c.Manifest, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(m, '\n'), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, s := range c.Sessions {
		line, err := json.Marshal(s)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions.jsonl"), b.Bytes(), 0o644); err != nil {
		return err
	}
	for _, sub := range []string{"coverage", "truth"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for _, s := range c.Manifest.Subjects {
		for _, v := range s.Versions {
			data, ok := c.coverage[s.Module+"@"+v.Version]
			if !ok {
				return fmt.Errorf("no coverage of %s@%s to write", s.Module, v.Version)
			}
			truth, ok := c.truth[s.Module+"@"+v.Version]
			if !ok {
				return fmt.Errorf("no truth of %s@%s to write", s.Module, v.Version)
			}
			for file, data := range map[string][]byte{coverageFile(dir, s.Module, v.Version): data, truthFile(dir, s.Module, v.Version): truth} {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(file, data, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}
