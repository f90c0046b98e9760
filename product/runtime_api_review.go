package product

import (
	"context"
	"strings"

	"github.com/needle-dev/needle/product/web"
)

// What a person judges before approving a change, projected for the
// lifecycle detail: the patch as a diff Needle computed, each criterion as
// the user wrote it with the verifier's verdict, and what the reviewer
// and the verifier wrote, always as labelled model text (workerText).

// acceptanceDTO pairs each criterion's text with the verifier's judgement
// of it, when there is a verification.
func acceptanceDTO(d LifecycleDetail) []web.AcceptanceCriterion {
	out := make([]web.AcceptanceCriterion, 0, len(d.Criteria))
	for _, c := range d.Criteria {
		a := web.AcceptanceCriterion{Ordinal: c.Criterion, Digest: c.Digest, Text: safeText(c.Text, web.MaxTextBytes), Reason: workerText("")}
		if v := d.Verification; v != nil {
			for _, j := range v.Criteria {
				if j.Criterion == c.Criterion {
					a.Status, a.Reason = string(j.Status), workerText(j.Reason)
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// reviewDTO projects the review's findings as model text.
func reviewDTO(d LifecycleDetail) *web.Review {
	if d.Review == nil {
		return nil
	}
	r := &web.Review{ReviewID: d.Review.ReviewID, Findings: []web.Finding{}}
	for _, f := range d.Review.Findings {
		r.Findings = append(r.Findings, web.Finding{Severity: string(f.Severity), Criterion: f.Criterion, Summary: workerText(f.Summary)})
	}
	return r
}

// diffDTO computes the diff of the patch in force, patchID, and splits it
// into marked lines. A diff Needle cannot compute is told in Error: the
// rest of the detail still shows.
func diffDTO(ctx context.Context, e *Engine, lid, patchID string) (*web.Diff, error) {
	text, err := e.lifecyclePatchDiff(ctx, lid, patchID)
	switch k := KindOf(err); {
	case err == nil:
	case k == kindConflict || k == kindNotFound:
		return &web.Diff{Lines: []web.DiffLine{}, Error: publicMessage(err)}, nil
	default:
		return nil, err
	}
	return diffLines(text), nil
}

// diffLines splits a unified diff into lines marked by kind, bounded to
// web.MaxDiffBytes of text.
func diffLines(text string) *web.Diff {
	d := &web.Diff{Lines: []web.DiffLine{}}
	size, inHunk := 0, false
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if size += len(line); size > web.MaxDiffBytes {
			d.Truncated = true
			break
		}
		l := web.DiffLine{Kind: "meta", Text: diffText(line)}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			inHunk = false
			l.Kind = "file"
			if _, b, ok := strings.Cut(line, " b/"); ok {
				l.Path = diffText(b)
			}
		case strings.HasPrefix(line, "@@"):
			inHunk, l.Kind = true, "hunk"
		case inHunk && strings.HasPrefix(line, "+"):
			l.Kind, l.Text = "add", diffText(line[1:])
		case inHunk && strings.HasPrefix(line, "-"):
			l.Kind, l.Text = "del", diffText(line[1:])
		case inHunk && strings.HasPrefix(line, " "):
			l.Kind, l.Text = "context", diffText(line[1:])
		}
		d.Lines = append(d.Lines, l)
	}
	return d
}

// diffText is a line of source for a DTO: tabs kept, other control
// characters blanked, invalid UTF-8 replaced.
func diffText(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\t' && (r < 0x20 || r == 0x7f) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
