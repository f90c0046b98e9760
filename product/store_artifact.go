package product

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The store's lifecycle artifacts: what each phase's adapter produced,
// persisted before the transition that commits its event (kernel.go).

// lifecycleArtifact is a worker artifact as persisted before the
// transition that cites it.
type lifecycleArtifact struct {
	Invocation string
	Lifecycle  string
	Phase      lifecycle.Phase
	Attempt    int
	Event      lifecycle.Event
	ArtifactID string
	Blobs      artifactBlobs
	Raw        string
	Thread     string
	Usage      workerUsage
}

// artifactBlobs are what an event only names: the patch's contents and the
// worker's report, test output, the verifier's reasons.
type artifactBlobs struct {
	Patch   []patchFile         `json:"patch,omitempty"`
	Report  *patchReport        `json:"report,omitempty"`
	Reasons []string            `json:"reasons,omitempty"`
	Outputs []testOutput        `json:"outputs,omitempty"`
	Verdict *verificationRecord `json:"verdict,omitempty"`
	// Dependencies are what the test runs compiled (the test evidence
	// binds their id).
	Dependencies *TestDependencies `json:"dependencies,omitempty"`
}

// testOutput is the kept output of one test plan's run.
type testOutput struct {
	Plan      string `json:"plan"`
	Output    string `json:"output"`
	Truncated bool   `json:"truncated"`
	Detail    string `json:"detail"`
}

// putArtifact persists a validated artifact unless its invocation already
// has one, and returns the one that is stored: a second runner (or a run
// after a crash) gets the first artifact back, never a second one.
func (s *store) putArtifact(ctx context.Context, a lifecycleArtifact) (lifecycleArtifact, error) {
	kind, payload, digest := lifecycle.EncodeEvent(a.Event)
	err := s.inTx(ctx, "store.lifecycle_artifact", func(tx *sql.Tx, now string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lifecycle_artifacts (invocation, lifecycle_id, phase, attempt, kind, event,
			event_digest, artifact_id, blobs, raw_output, thread_identity, usage, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (invocation) DO NOTHING`,
			a.Invocation, a.Lifecycle, a.Phase, a.Attempt, kind, string(payload), digest, a.ArtifactID, mustJSON(a.Blobs),
			a.Raw, a.Thread, mustJSON(a.Usage), now)
		return err
	})
	if err != nil {
		return a, err
	}
	stored, ok, err := s.artifact(ctx, a.Invocation)
	if err == nil && !ok {
		err = storeError("store.lifecycle_artifact", fmt.Errorf("artifact %s vanished", a.Invocation))
	}
	return stored, err
}

const artifactColumns = `invocation, lifecycle_id, phase, attempt, kind, event, event_digest, artifact_id, blobs, raw_output,
	thread_identity, usage`

// artifact reads the artifact of an invocation, checking its event's
// canonical form and payload digest.
func (s *store) artifact(ctx context.Context, invocation string) (lifecycleArtifact, bool, error) {
	return s.artifactWhere(ctx, `invocation = ?`, invocation)
}

// artifactByID reads the artifact of a lifecycle that produced an id (a
// patch, test evidence, a review, a verification).
func (s *store) artifactByID(ctx context.Context, lid, id string) (lifecycleArtifact, bool, error) {
	return s.artifactWhere(ctx, `lifecycle_id = ? AND artifact_id = ? ORDER BY attempt DESC LIMIT 1`, lid, id)
}

func (s *store) artifactWhere(ctx context.Context, where string, args ...any) (lifecycleArtifact, bool, error) {
	var a lifecycleArtifact
	var kind, event, digest, blobs, usage string
	// where is one of this file's constants, never input.
	err := s.db.QueryRowContext(ctx, `SELECT `+artifactColumns+` FROM lifecycle_artifacts WHERE `+where, args...).
		Scan(&a.Invocation, &a.Lifecycle, &a.Phase, &a.Attempt, &kind, &event, &digest, &a.ArtifactID, &blobs, &a.Raw, &a.Thread, &usage)
	if errNoRows(err) {
		return a, false, nil
	}
	if err != nil {
		return a, false, storeError("store.lifecycle_artifact", err)
	}
	ev, err := decodeLifecycleEvent(kind, []byte(event))
	if err != nil || lifecycle.EventDigest(ev) != digest {
		return a, false, &Error{Op: "store.lifecycle_artifact", Kind: kindStore,
			Err: fmt.Errorf("artifact %s is corrupt: its event does not match its digest (%v)", a.Invocation, err)}
	}
	a.Event = ev
	if err := decodeStored(blobs, &a.Blobs); err != nil {
		return a, false, err
	}
	if err := checkArtifact(a); err != nil {
		return a, false, err
	}
	return a, true, decodeStored(usage, &a.Usage)
}

// artifactCount counts a lifecycle's artifacts per phase and attempt (the
// crash tests' view: at most one per invocation).
func (s *store) lifecycleArtifacts(ctx context.Context, lid string) ([]lifecycleArtifact, error) {
	invs, err := queryAll(ctx, s.db, "store.lifecycle_artifacts", `SELECT invocation FROM lifecycle_artifacts WHERE lifecycle_id = ?
		ORDER BY created_at, invocation`, []any{lid}, func(rows rowScanner, inv *string) error { return rows.Scan(inv) })
	if err != nil {
		return nil, err
	}
	out := make([]lifecycleArtifact, 0, len(invs))
	for _, inv := range invs {
		a, _, err := s.artifact(ctx, inv)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// TestDependencies are what a test phase's runs depended on, as the frozen
// snapshot had it.
type TestDependencies struct {
	Head  string               `json:"head"`  // the snapshot's HEAD commit, "" without git
	Files []testDependencyFile `json:"files"` // every compiled file of the checkout and its modules' go.mod, go.sum (go.work), sorted by path
	Dirs  []testDependencyDir  `json:"dirs"`  // every directory of a compiled package, sorted by dir
}
