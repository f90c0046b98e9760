package product

import (
	"encoding/json"
	"errors"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/needle-dev/needle/product/internal/safetext"
)

// FuzzDecodeChangeRequest feeds arbitrary bytes to the prepare_change
// decoder. It must never panic, must fail only with a KindInvalidInput
// *Error naming a path, and whatever it accepts must hold every bound and
// decode to the same request (and request id) from its canonical JSON.
func FuzzDecodeChangeRequest(f *testing.F) {
	for _, name := range []string{"verified", "undeclared", "repair"} {
		var sc struct {
			Request json.RawMessage `json:"request"`
		}
		_ = json.Unmarshal(MustReadFile(f, "../fixtures/changes/"+name+".json"), &sc)
		f.Add([]byte(sc.Request))
	}
	f.Add([]byte(`{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":".","kind":"subtree"}],"constraints":{"max_files":1,"max_bytes":2,"notes":["n"]},"artifact_ids":["b3:` + "0000000000000000000000000000000000000000000000000000000000000000" + `"]}`))
	f.Add([]byte(`{"change_id":"chg_000000000000000000000000"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if id, err := decodeChangeID(data); err != nil {
			checkInvalid(t, err)
		} else if !changeIDPattern.MatchString(id) {
			t.Fatalf("DecodeChangeID accepted %q", id)
		}
		req, err := DecodeChangeRequest(data)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		if len(req.Criteria) < 1 || len(req.Criteria) > maxCriteria || len(req.Scopes) < 1 || len(req.Scopes) > maxScopes ||
			req.Constraints.MaxFiles < 1 || req.Constraints.MaxFiles > maxPatchFiles ||
			req.Constraints.MaxBytes < 1 || req.Constraints.MaxBytes > maxPatchBytes {
			t.Fatalf("accepted a request out of bounds: %+v", req)
		}
		for _, s := range req.Scopes {
			if checkScopePath(s.Path, s.Kind) != nil || safetext.CheckRepoPath(s.Path) != nil || s.Path != norm.NFC.String(s.Path) {
				t.Fatalf("accepted scope %+v", s)
			}
		}
		again, err := DecodeChangeRequest([]byte(mustJSON(req)))
		if err != nil {
			t.Fatalf("canonical JSON of an accepted request is rejected: %v\n%s", err, mustJSON(req))
		}
		if a, b := mustID("needle.change_request.v1", req), mustID("needle.change_request.v1", again); a != b {
			t.Fatalf("request id changed on a round trip: %s, %s", a, b)
		}
	})
}

// TestDecodeChangeRequest_FirstBadIDField shows the ids are checked in a
// fixed order: with both lists malformed, the error always names
// artifact_ids, whatever the run.
func TestDecodeChangeRequest_FirstBadIDField(t *testing.T) {
	data := []byte(`{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":".","kind":"subtree"}],"artifact_ids":["x"],"claim_ids":["y"]}`)
	for range 20 {
		_, err := DecodeChangeRequest(data)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInvalidInput || e.Path != "artifact_ids[0]" {
			t.Fatalf("error %v, want invalid input at artifact_ids[0]", err)
		}
	}
}
