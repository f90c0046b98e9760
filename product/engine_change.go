package product

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/safetext"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The patch Needle builds from a patch worker's checkout (the lifecycle's
// implement phase, change_mcp.go for MCP). The worker writes in a
// disposable checkout; Needle compares the checkout with its base outside
// the sandbox and builds the patch itself, so nothing the worker says
// about its change is trusted, and rejects (fail closed) any write the
// request does not allow. Also here: the certified evidence a change
// cites, each proven fresh for the current source.

// implementAttempt is the patch attempt an implement artifact records.
func implementAttempt(a lifecycleArtifact, ev lifecycle.ImplementCompleted, round int) patchAttempt {
	att := patchAttempt{revision: round, status: patchRejected, ops: []storedOperation{}, reasons: ev.Reasons,
		report: a.Blobs.Report, raw: a.Raw, inv: a.Thread, usage: a.Usage}
	if ev.Outcome == lifecycle.PatchAccepted {
		att.status, att.patchID, att.ops, att.reasons = patchAccepted, ev.Patch, storedOps(a.Blobs.Patch), []string{}
		att.bytes = ev.Bytes
	}
	return att
}

// build compares the checkout with its base and makes the patch, rejecting
// (fail closed) anything the worker may not do. laid is the patch the
// checkout was given before the worker ran (a repair builds on it): the
// result is cumulative against the original base.
func (a *patchAttempt) build(ctx context.Context, co *checkout.Checkout, req changeRequest, laid []storedOperation) error {
	changes, err := co.Changes(ctx)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	base := a.scan(co, req.Scopes, laid, changes)
	if len(a.reasons) > 0 {
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(base.paths)) {
		a.readOp(co, p, base)
	}
	// A process of the worker that outlived it must not change the tree
	// between the scan and the reads: scan and read again, and refuse any
	// difference.
	if again, err := co.Changes(ctx); err != nil || !slices.Equal(again, changes) {
		a.reasons = append(a.reasons, "the checkout changed while the patch was being built")
	}
	for _, op := range a.ops {
		data, err := co.ReadFile(op.Path)
		if (op.Op == patchDelete) != (err != nil) || op.Op != patchDelete && string(data) != op.Content {
			a.reasons = append(a.reasons, fmt.Sprintf("%s changed while the patch was being built", op.Path))
		}
	}
	switch c := req.Constraints; {
	case len(a.reasons) > 0:
	case len(a.ops) == 0:
		a.reasons = append(a.reasons, "the patch worker changed nothing")
	case len(a.ops) > c.MaxFiles:
		a.reasons = append(a.reasons, fmt.Sprintf("the patch touches %d files; the limit is %d", len(a.ops), c.MaxFiles))
	case a.bytes > c.MaxBytes:
		a.reasons = append(a.reasons, fmt.Sprintf("the patch writes %d bytes; the limit is %d", a.bytes, c.MaxBytes))
	}
	return nil
}

// patchBase is what each path a patch may touch was before: its base
// content digest, whether it is executable, and whether the patch laid on
// the checkout (a repair's) already held it.
type patchBase struct {
	before            map[string]string
	exec, paths, laid map[string]bool
}

// scan collects the base of every path the laid patch or the worker
// touched, rejecting (fail closed) a path no patch may hold.
func (a *patchAttempt) scan(co *checkout.Checkout, scopes []pathScope, laid []storedOperation, changes []checkout.Change) patchBase {
	b := patchBase{before: map[string]string{}, exec: map[string]bool{}, paths: map[string]bool{}, laid: map[string]bool{}}
	for _, op := range laid {
		b.before[op.Path], b.exec[op.Path], b.paths[op.Path], b.laid[op.Path] = op.Before, op.Executable, true, true
	}
	for _, ch := range changes {
		b.exec[ch.Path] = ch.Mode&0o100 != 0
		if !b.paths[ch.Path] {
			b.before[ch.Path], _ = co.BaseDigest(ch.Path)
			b.paths[ch.Path] = true
		}
		switch {
		case unsafePatchPath(ch.Path) != "":
			a.reasons = append(a.reasons, fmt.Sprintf("%s: %s", showPath(ch.Path), unsafePatchPath(ch.Path)))
		case ch.Kind != checkout.KindFile:
			a.reasons = append(a.reasons, fmt.Sprintf("%s: a %s is not a file a patch may hold", ch.Path, ch.Kind))
		case !inScope(scopes, ch.Path):
			a.reasons = append(a.reasons, fmt.Sprintf("%s: outside the declared scopes", ch.Path))
		}
	}
	return b
}

// readOp reads path p from the checkout into the patch's operation on it
// (none when it ends as it began).
func (a *patchAttempt) readOp(co *checkout.Checkout, p string, b patchBase) {
	op := storedOperation{PatchOperation: PatchOperation{Path: p, Before: b.before[p]}}
	data, err := co.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		if op.Before == "" {
			return // added and removed again
		}
		op.Op = patchDelete
	case err != nil:
		a.reasons = append(a.reasons, fmt.Sprintf("%s: %v", p, err))
		return
	case !utf8.Valid(data) || slices.Contains(data, 0):
		a.reasons = append(a.reasons, fmt.Sprintf("%s: binary content (not UTF-8 text)", p))
		return
	default:
		op.After = contentid.OfBytes(snapshot.FileTag, data)
		op.Content, op.Bytes = string(data), len(data)
		op.Executable = b.exec[p]
		op.Op = patchModify
		if op.Before == "" {
			op.Op = patchAdd
		}
	}
	if op.Before == op.After && b.laid[p] {
		return // a repair took the file back to its base content
	}
	a.ops = append(a.ops, op)
	a.bytes += op.Bytes
}

// finish records the worker's output and decides the attempt's status.
func (a *patchAttempt) finish(out sessionOutput, runErr error, criteria int) {
	a.inv, a.usage = out.Invocation, out.Usage
	if runErr != nil {
		a.status, a.ops, a.bytes = patchFailed, nil, 0
		a.reasons = []string{"the patch worker failed: " + oneLine(runErr.Error())}
		return
	}
	if len(out.Finals) > 0 {
		a.raw = out.Finals[0]
		a.report = decodePatchReport(a.raw, criteria)
	}
	if len(a.reasons) > 0 {
		a.status = patchRejected
		for i := range a.ops {
			a.ops[i].Content = "" // a rejected attempt keeps no blobs
		}
		return
	}
	a.status = patchAccepted
	a.patchID = mustID(tagPatch, a.publicOps())
}

func (a *patchAttempt) publicOps() []PatchOperation {
	out := []PatchOperation{}
	for _, op := range a.ops {
		out = append(out, op.PatchOperation)
	}
	return out
}

// baseOf is what a patch was made against: path → base content digest.
func baseOf(ops []storedOperation) map[string]string {
	m := map[string]string{}
	for _, op := range ops {
		m[op.Path] = op.Before
	}
	return m
}

// writes turns stored operations into checkout writes, deletions first (a
// directory deleted to make room for a file goes before the file).
func writes(ops []storedOperation) []checkout.Write {
	var dels, puts []checkout.Write
	for _, op := range ops {
		if op.Op == patchDelete {
			dels = append(dels, checkout.Write{Path: op.Path, Delete: true})
			continue
		}
		puts = append(puts, checkout.Write{Path: op.Path, Data: []byte(op.Content), Exec: op.Executable})
	}
	return append(dels, puts...)
}

// coverage lays the patch worker's report over the criteria.
func coverage(req changeRequest, r *patchReport) []criterionCoverage {
	out := make([]criterionCoverage, len(req.Criteria))
	for i := range out {
		out[i] = criterionCoverage{Criterion: i + 1, Status: coverageUnreported, Note: ""}
	}
	if r == nil {
		return out
	}
	for _, c := range r.Criteria {
		out[c.Criterion-1].Status, out[c.Criterion-1].Note = coverageNotAddressed, c.Note
		if c.Addressed {
			out[c.Criterion-1].Status = coverageClaimed
		}
	}
	return out
}

// residualRisks are what the caller should know before trusting the patch:
// Needle's own findings first, then (bounded) what the worker reported.
func residualRisks(req changeRequest, a patchAttempt) []string {
	risks := []string{}
	if a.status != patchAccepted {
		return risks
	}
	risks = append(risks, "unverified: acceptance coverage is the patch worker's claim until verify_change")
	if a.report == nil {
		risks = append(risks, "the patch worker's report was missing or malformed")
	}
	for _, c := range coverage(req, a.report) {
		if c.Status != coverageClaimed {
			risks = append(risks, fmt.Sprintf("criterion %d: not claimed as addressed", c.Criterion))
		}
	}
	tests := false
	for _, op := range a.ops {
		tests = tests || strings.HasSuffix(op.Path, "_test.go")
	}
	if !tests {
		risks = append(risks, "no test file changed")
	}
	if a.report != nil {
		for _, r := range a.report.Risks {
			risks = append(risks, "patch worker: "+r)
		}
	}
	return risks
}

// changeText is the bounded text of a prepare_change result.
func changeText(r changeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "change %s: %s", r.ChangeID, r.Status)
	if r.PatchID != "" {
		fmt.Fprintf(&b, " (patch %s, revision %d)", r.PatchID, r.Revision)
	}
	b.WriteString("\n")
	for _, op := range r.Operations {
		fmt.Fprintf(&b, "  %s %s (%d bytes)\n", op.Op, op.Path, op.Bytes)
	}
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "  rejected: %s\n", reason)
	}
	for _, c := range r.Acceptance {
		fmt.Fprintf(&b, "  criterion %d: %s\n", c.Criterion, c.Status)
	}
	for _, risk := range r.ResidualRisks {
		fmt.Fprintf(&b, "  risk: %s\n", risk)
	}
	fmt.Fprintf(&b, "verification: %s; nothing is applied to your work tree.\n", r.VerificationStatus)
	return clipLines(b.String(), defaultFrontierBudget)
}

// certifiedRefs turns the request's artifact and claim ids into citation
// lines. Each must name certified evidence that is fresh for the current
// source; anything else is invalid input (stale evidence is never passed on).
func (e *Engine) certifiedRefs(ctx context.Context, req changeRequest) ([]string, error) {
	var lines []string
	for i, id := range req.ArtifactIDs {
		c, err := e.freshArtifact(ctx, id)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, invalidf(opChange, fmt.Sprintf("artifact_ids[%d]", i), "%s is not certified evidence fresh for the current source", id)
		}
		lines = append(lines, citeChoice(choice{Obligation: obligation{Kind: c.Proposal.Kind}, Evidence: *c})...)
	}
	for i, id := range req.ClaimIDs {
		c, claim, err := e.freshClaim(ctx, id)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, invalidf(opChange, fmt.Sprintf("claim_ids[%d]", i), "%s is not a certified claim fresh for the current source", id)
		}
		lines = append(lines, citeChoice(choice{Obligation: obligation{Kind: capImplementationLocation}, Evidence: *c, Claim: claim})...)
	}
	return lines, nil
}

func (e *Engine) freshArtifact(ctx context.Context, id string) (*candidate, error) {
	cert, ok, err := e.store.artifactCertificate(ctx, id)
	if !ok || err != nil {
		return nil, err
	}
	return e.freshEvidence(ctx, cert)
}

func (e *Engine) freshClaim(ctx context.Context, id string) (*candidate, *claimAt, error) {
	// A claim is carried by every certificate that re-certified its
	// artifact; the newest few are enough to find a fresh one.
	certs, err := e.store.claimCertificates(ctx, id, 4)
	if err != nil {
		return nil, nil, err
	}
	for _, cert := range certs {
		c, err := e.freshEvidence(ctx, cert)
		if err != nil || c == nil {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		for _, cl := range c.Claims {
			if cl.ID == id {
				return c, &cl, nil
			}
		}
	}
	return nil, nil, nil
}

// freshEvidence loads a certificate's evidence and returns it when it is
// fresh (or replays fresh) for the current source.
func (e *Engine) freshEvidence(ctx context.Context, certID string) (*candidate, error) {
	ev, err := e.store.evidenceByCertificate(ctx, certID)
	if err != nil {
		return nil, err
	}
	c, err := e.classify(ctx, ev)
	if err != nil {
		return nil, err
	}
	if !c.usable() {
		return nil, nil
	}
	return &c, nil
}

// unsafePatchPath says why a path a patch worker created may not be part of
// a patch ("" when it may): the repository-path rule (safetext) every path
// Needle accepts obeys — no control, format (bidi, zero-width) or separator
// character, no backslash, and no component that is git metadata on any
// file system (".git" in any case, with HFS+'s ignorable code points or
// NTFS's trailing dots, spaces and streams, its 8.3 short names GIT~N).
func unsafePatchPath(p string) string {
	var pe *safetext.PathError
	if err := safetext.CheckRepoPath(p); errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}
