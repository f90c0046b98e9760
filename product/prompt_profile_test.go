package product

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// revisionsGolden records each shipped revision of the prompt profile and
// the marker grammar with its digest, one "KIND REVISION DIGEST" a line.
const revisionsGolden = "testdata/revisions.golden"

// checkRevision holds a revisioned digest to revisionsGolden: a shipped
// revision never changes its digest (not even with NEEDLE_UPDATE=1); a
// new revision is recorded with NEEDLE_UPDATE=1.
func checkRevision(t *testing.T, kind string, revision int, digest, bump string) {
	t.Helper()
	data, err := os.ReadFile(revisionsGolden)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(strings.NewReader(string(data)))
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) != 3 || f[0] != kind {
			continue
		}
		if n, _ := strconv.Atoi(f[1]); n != revision {
			continue
		}
		if f[2] != digest {
			t.Fatalf("%s revision %d was %s and is %s now: what it covers changed, so %s", kind, revision, f[2], digest, bump)
		}
		return
	}
	if !updateGolden {
		t.Fatalf("%s revision %d (%s) is not in %s: NEEDLE_UPDATE=1 records it", kind, revision, digest, revisionsGolden)
	}
	out := string(data) + fmt.Sprintf("%s %d %s\n", kind, revision, digest)
	if err := os.WriteFile(revisionsGolden, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPromptProfile_Revisions: a change of what any worker is sent changes
// the prompt profile's digest, and a shipped revision keeps its digest.
func TestPromptProfile_Revisions(t *testing.T) {
	p := currentPromptProfile()
	if p.Revision != promptProfileRevision || len(p.Sets) != len(promptSetNames) {
		t.Fatalf("prompt profile %+v", p)
	}
	checkRevision(t, "prompt_profile", p.Revision, p.Digest,
		"bump PromptProfileRevision and re-record the frozen transcripts (make frozen-worker frozen-changes frozen-lifecycle frozen-hook frozen-corpus frozen-exec)")
}

// TestPromptProfile_WhatIsSent holds the prompt sets to what the workers
// really sent, as the real codex recorded it in the frozen transcripts:
// the developer instructions of the patch, review and verify sessions and
// every output schema are the profile's, so its digest is one of what is
// sent.
func TestPromptProfile_WhatIsSent(t *testing.T) {
	instructions, schemas := map[string]bool{}, map[string]bool{}
	for _, dir := range []string{"../frozen/lifecycle/verified", "../frozen/changes/repair", "../frozen/worker/grepx", "../frozen/tiny"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no transcripts in %s: %v", dir, err)
		}
		for _, f := range files {
			tr, err := transcript.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tr.Lines {
				var m struct {
					Method string `json:"method"`
					Params struct {
						DeveloperInstructions string          `json:"developerInstructions"`
						OutputSchema          json.RawMessage `json:"outputSchema"`
					} `json:"params"`
				}
				if l.Dir != "c2s" || json.Unmarshal(l.Msg, &m) != nil {
					continue
				}
				switch m.Method {
				case "thread/start":
					instructions[invocationRE.ReplaceAllString(m.Params.DeveloperInstructions, "(invocation b3:sample)")] = true
				case "turn/start":
					schemas[canonicalJSON(t, m.Params.OutputSchema)] = true
				}
			}
		}
	}
	for _, name := range promptSetNames {
		set := promptSets()[name]
		if !instructions[set.Instructions] {
			t.Errorf("the %s prompt set's instructions were never sent: %.80q…", name, set.Instructions)
		}
		for i, s := range set.Schemas {
			if !schemas[canonicalJSON(t, s)] {
				t.Errorf("the %s prompt set's schema %d was never sent: %.120s", name, i, s)
			}
		}
	}
}

// invocationRE matches the invocation a worker's instructions name.
var invocationRE = regexp.MustCompile(`\(invocation b3:[0-9a-f]{64}\)`)

func canonicalJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestMarkerGrammar_Revisions: a change of how any sample message reads
// changes the grammar's digest, and a shipped revision keeps its digest.
func TestMarkerGrammar_Revisions(t *testing.T) {
	checkRevision(t, "marker_grammar", markerGrammarRevision, markerGrammar(), "bump MarkerGrammarRevision")
}
