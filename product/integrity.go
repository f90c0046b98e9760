package product

import (
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Integrity of the change records. A patch is approved, tested and
// verified by its content address; the blobs it names (each file's new
// content) and the artifacts that carry them are stored beside it. Every
// read of one that is about to be acted on — apply, diff, a phase's
// adapter, verify_change, a served detail — checks it against the
// address it is bound to, here, and a record that does not check is a
// kindIntegrity error naming it: nothing is written or served from it,
// and the lifecycle goes no further.

const opIntegrity = "store.integrity"

// checkPatchBlob checks a patch's files against the patch id they are
// bound to: the operations hash to id, every new content hashes to its
// operation's after digest and has its size, and a deletion has none.
// record names the patch for the error ("patch b3:… of change chg_…").
func checkPatchBlob(record, id string, files []patchFile) error {
	if got := patchID(files); got != id {
		return integrityf(opIntegrity, record, "its operations hash to %s", got)
	}
	for _, f := range files {
		if f.Op == patchDelete {
			if f.Content != "" || f.After != "" || f.Bytes != 0 {
				return integrityf(opIntegrity, record, "the deletion of %s carries content", showPath(f.Path))
			}
			continue
		}
		if got := contentid.OfBytes(snapshot.FileTag, []byte(f.Content)); got != f.After || len(f.Content) != f.Bytes {
			return integrityf(opIntegrity, record, "the blob of %s hashes to %s (%d bytes), not its after digest %s (%d bytes)",
				showPath(f.Path), got, len(f.Content), f.After, f.Bytes)
		}
	}
	return nil
}

// checkArtifact checks a lifecycle artifact (its event's digest is
// checked as it is decoded) against the ids its event binds: its artifact
// id is the one the event produced, a patch's blobs are the patch, and a
// verification's kept verdict is the one the event judged.
func checkArtifact(a lifecycleArtifact) error {
	record := "lifecycle artifact " + a.Invocation + " of " + a.Lifecycle
	want := ""
	switch ev := a.Event.(type) {
	case lifecycle.ImplementCompleted:
		if ev.Outcome == lifecycle.PatchAccepted {
			want = ev.Patch
			if err := checkPatchBlob("the blob of patch "+ev.Patch+" of "+a.Lifecycle, ev.Patch, a.Blobs.Patch); err != nil {
				return err
			}
		} else if len(a.Blobs.Patch) > 0 {
			return integrityf(opIntegrity, record, "a rejected patch carries a blob")
		}
	case lifecycle.TestCompleted:
		want = ev.Evidence.ID()
		if d := a.Blobs.Dependencies; (d == nil) != (ev.Evidence.Dependencies == "") || (d != nil && d.ID() != ev.Evidence.Dependencies) {
			return integrityf(opIntegrity, record, "its test dependencies are not the %q the test evidence %s binds", ev.Evidence.Dependencies, want)
		}
	case lifecycle.ReviewCompleted:
		want = ev.Review.ID()
	case lifecycle.VerifyCompleted:
		want = ev.Verification.ID()
		if !judges(ev.Verification, a.Blobs.Verdict) {
			return integrityf(opIntegrity, record, "its kept verdict is not the verification %s", want)
		}
	}
	if a.ArtifactID != want {
		return integrityf(opIntegrity, record, "its artifact id %s is not the id %q its event produced", a.ArtifactID, want)
	}
	return nil
}

// judges reports whether vr is the verdict v was made from (verify in
// kernel.go): the same outcome, repair and criteria with their notes.
func judges(v lifecycle.VerificationArtifact, vr *verificationRecord) bool {
	if vr == nil || vr.Verdict != v.Outcome || clip(vr.Repair, lifecycle.MaxRepairBytes) != v.Repair || len(vr.Criteria) != len(v.Criteria) {
		return false
	}
	for i, c := range vr.Criteria {
		if j := v.Criteria[i]; j.Criterion != i+1 || j.Status != c.Status || j.Note != judgementNote(c.Reason) {
			return false
		}
	}
	return true
}

// judgementNote is a verifier's reason as a verification artifact keeps it.
func judgementNote(reason string) string {
	return clip(strings.ToValidUTF8(strings.ReplaceAll(reason, "\x00", ""), ""), lifecycle.MaxTextBytes)
}
