package product

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// A patch as Needle stores, names and checks it: the files a patch worker
// proposed, the operations stored for them, and one patch worker run with
// the patch built from it.

// patchFile is one operation of a patch with its new content ("" for a
// deletion).
type patchFile struct {
	PatchOperation
	Content string `json:"content"`
}

// checkPatchFiles checks a patch an adapter returned with Needle's own
// rules, whatever the adapter did: sorted unique safe paths inside the
// scopes, operations consistent with their digests, contents matching
// their digests, within the request's limits. It returns the reasons to
// reject the patch (none when it may stand).
func checkPatchFiles(req changeRequest, files []patchFile) []string {
	var reasons []string
	bytes := 0
	if len(files) == 0 {
		return []string{"the patch changes nothing"}
	}
	for i, f := range files {
		p := f.Path
		switch {
		case unsafePatchPath(p) != "":
			reasons = append(reasons, fmt.Sprintf("%s: %s", showPath(p), unsafePatchPath(p)))
			continue
		case checkScopePath(p, scopeExact) != nil:
			reasons = append(reasons, fmt.Sprintf("%s: not a clean repository path", showPath(p)))
			continue
		case !inScope(req.Scopes, p):
			reasons = append(reasons, fmt.Sprintf("%s: outside the declared scopes", p))
		case i > 0 && files[i-1].Path >= p:
			reasons = append(reasons, fmt.Sprintf("%s: paths are not sorted, or one repeats", p))
		}
		want := patchModify
		switch {
		case f.Before == "":
			want = patchAdd
		case f.After == "":
			want = patchDelete
		}
		digestOK := f.Before == "" || contentid.Valid(f.Before)
		switch {
		case f.Op != want || !digestOK || f.Before == f.After:
			reasons = append(reasons, fmt.Sprintf("%s: operation %s does not fit its digests", p, f.Op))
		case f.Op == patchDelete && (f.Content != "" || f.Bytes != 0):
			reasons = append(reasons, fmt.Sprintf("%s: a deletion has no content", p))
		case f.Op != patchDelete && (f.After != contentid.OfBytes(snapshot.FileTag, []byte(f.Content)) || f.Bytes != len(f.Content)):
			reasons = append(reasons, fmt.Sprintf("%s: the content does not match its digest", p))
		case f.Op != patchDelete && (!utf8.ValidString(f.Content) || strings.ContainsRune(f.Content, 0)):
			reasons = append(reasons, fmt.Sprintf("%s: binary content (not UTF-8 text)", p))
		}
		bytes += f.Bytes
	}
	if len(files) > req.Constraints.MaxFiles {
		reasons = append(reasons, fmt.Sprintf("the patch touches %d files; the limit is %d", len(files), req.Constraints.MaxFiles))
	}
	if bytes > req.Constraints.MaxBytes {
		reasons = append(reasons, fmt.Sprintf("the patch writes %d bytes; the limit is %d", bytes, req.Constraints.MaxBytes))
	}
	return reasons
}

// patchID is the content id of a patch's operations (as prepare_change
// names patches).
func patchID(files []patchFile) string { return mustID(tagPatch, publicOps(files)) }

func publicOps(files []patchFile) []PatchOperation {
	out := make([]PatchOperation, len(files))
	for i, f := range files {
		out[i] = f.PatchOperation
	}
	return out
}

func patchBytes(files []patchFile) int {
	n := 0
	for _, f := range files {
		n += f.Bytes
	}
	return n
}

// storedOps and patchFiles convert between the lifecycle's patch files and
// the change journal's stored operations (the same fields).
func storedOps(files []patchFile) []storedOperation {
	out := make([]storedOperation, len(files))
	for i, f := range files {
		out[i] = storedOperation(f)
	}
	return out
}

func patchFiles(ops []storedOperation) []patchFile {
	out := make([]patchFile, len(ops))
	for i, op := range ops {
		out[i] = patchFile(op)
	}
	return out
}

// patchAttempt is one patch worker run and the patch Needle built from it.
type patchAttempt struct {
	revision int
	status   patchStatus
	patchID  string
	ops      []storedOperation
	bytes    int
	reasons  []string
	report   *patchReport
	raw      string
	inv      string
	usage    workerUsage
}

// patchReport is a patch worker's final message, decoded and bounded.
type patchReport struct {
	Summary  string `json:"summary"`
	Criteria []struct {
		Criterion int    `json:"criterion"`
		Addressed bool   `json:"addressed"`
		Note      string `json:"note"`
	} `json:"criteria"`
	Risks []string `json:"risks"`
}
