package product

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// isFresh reports whether every dependency digest is unchanged in the
// current source. It reads only the dependencies (through the stat cache),
// so its cost is O(dependencies), not O(repository). A dependency that
// cannot be read is not fresh: unknown validity is never served.
func isFresh(ctx context.Context, repo *snapshot.Repo, deps []dependency) (bool, error) {
	for _, d := range deps {
		digest, known, err := dependencyDigest(ctx, repo, d)
		if !known {
			return false, nil
		}
		if errors.Is(err, snapshot.ErrNotExist) || errors.Is(err, snapshot.ErrNotRegular) || errors.Is(err, snapshot.ErrUnsafePath) ||
			errors.Is(err, snapshot.ErrUnreadable) || errors.Is(err, snapshot.ErrTooLarge) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if digest != d.Digest {
			return false, nil
		}
	}
	return true, nil
}

// dependencyDigest digests one dependency in the current source; known is
// false for a dependency kind this build does not know, which is never
// fresh.
func dependencyDigest(ctx context.Context, repo *snapshot.Repo, d dependency) (digest string, known bool, err error) {
	switch d.Kind {
	case dependencyFile:
		digest, err = repo.FileDigestMax(d.Path, maxCitedFileBytes)
	case dependencyDir:
		digest, err = repo.DirDigest(ctx, d.Path)
	default:
		return "", false, nil
	}
	return digest, true, err
}

// relocate finds the cited text in the current file: unchanged at the same
// lines, or intact at exactly one other place (the lines shifted). Anything
// else (gone, edited, or now present more than once) fails.
func relocate(repo *snapshot.Repo, c citedLocation) (start, end int, ok bool) {
	data, _, err := repo.ReadFileMax(c.Path, maxCitedFileBytes)
	if err != nil {
		return 0, 0, false
	}
	lines := strings.SplitAfter(string(data), "\n")
	want := strings.SplitAfter(c.Excerpt, "\n")
	if len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	n := len(want)
	match := func(at int) bool {
		if at < 0 || at+n > len(lines) {
			return false
		}
		for i := range want {
			if lines[at+i] != want[i] {
				return false
			}
		}
		return true
	}
	if match(c.StartLine - 1) {
		return c.StartLine, c.EndLine, true
	}
	found := -1
	for at := 0; at+n <= len(lines); at++ {
		if match(at) {
			if found >= 0 {
				return 0, 0, false // the same text twice: which one is meant is unknown
			}
			found = at
		}
	}
	if found < 0 {
		return 0, 0, false
	}
	return found + 1, found + n, true
}

// relocated returns the proposal moved to where its cited text now is.
func relocated(p proposal, cited []citedLocation, repo *snapshot.Repo) (proposal, bool) {
	q := p
	switch p.Kind {
	case capImplementationLocation:
		if len(cited) != 1 {
			return proposal{}, false
		}
		start, end, ok := relocate(repo, cited[0])
		if !ok {
			return proposal{}, false
		}
		q.StartLine, q.EndLine = start, end
	case capRuntimeFlow:
		if len(cited) != len(p.Steps) {
			return proposal{}, false
		}
		q.Steps = append([]flowStep(nil), p.Steps...)
		for i := range q.Steps {
			start, end, ok := relocate(repo, cited[i])
			if !ok {
				return proposal{}, false
			}
			q.Steps[i].StartLine, q.Steps[i].EndLine = start, end
		}
	}
	return q, true
}

// classify decides the freshness of one piece of evidence, replaying its
// proof when a dependency changed: the proposal is moved to where its cited
// text now is and validated again from scratch on the current source. A
// successful replay is stored as a new certificate (and, when lines moved, a
// new artifact whose origin is the old one) with the same claims. Evidence
// certified by another validator version is replayed too, however fresh:
// what an older validator accepted is proven again before it is served.
func (e *Engine) classify(ctx context.Context, ev Evidence) (candidate, error) {
	fresh := false
	if ev.Certificate.ValidatorVersion == validatorVersion {
		var err error
		if fresh, err = isFresh(ctx, e.repo, ev.Certificate.Dependencies); err != nil {
			return candidate{}, err
		}
	}
	if fresh {
		return candidate{Evidence: ev, State: stateFresh}, nil
	}
	// A certificate read through an older record (a need certificate made
	// before) may have been proven again since, by a need or a refresh: the
	// newest proof of the artifact that speaks for it, when fresh, is served
	// rather than proven once more.
	if cur, ok, err := e.provenSince(ctx, ev); err != nil || ok {
		return candidate{Evidence: cur, State: stateFresh}, err
	}
	q, ok := relocated(ev.Proposal, ev.Certificate.Cited, e.repo)
	if !ok {
		return candidate{Evidence: ev, State: stateStale}, nil
	}
	v, err := e.val.validate(ctx, q)
	if err != nil {
		return candidate{}, err
	}
	if !v.Certified() {
		return candidate{Evidence: ev, State: stateStale}, nil
	}
	raw, _ := json.Marshal(q)
	rec, err := e.store.recordAttempt(ctx, e.root, "", "replay", raw, v, ev.ArtifactID)
	if err != nil {
		return candidate{}, err
	}
	replayed, err := e.store.evidenceByCertificate(ctx, rec.CertificateID)
	if err != nil {
		return candidate{}, err
	}
	return candidate{Evidence: replayed, State: stateReplayed}, nil
}

// provenSince returns the newest certificate of the artifact that speaks
// for ev's now (Store.currentCertificate) when it is another certificate
// than ev's, of this validator version, and fresh.
func (e *Engine) provenSince(ctx context.Context, ev Evidence) (Evidence, bool, error) {
	id, ok, err := e.store.currentCertificate(ctx, ev.ArtifactID)
	if err != nil || !ok || id == ev.CertificateID {
		return Evidence{}, false, err
	}
	cur, err := e.store.evidenceByCertificate(ctx, id)
	if err != nil || cur.Certificate.ValidatorVersion != validatorVersion {
		return Evidence{}, false, err
	}
	fresh, err := isFresh(ctx, e.repo, cur.Certificate.Dependencies)
	if err != nil || !fresh {
		return Evidence{}, false, err
	}
	return cur, true, nil
}
