package product

import (
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// storeCache holds decoded immutable records of a store, keyed by content
// id, so that a long-lived process (the resident runtime) decodes each
// once. A content id names exactly one content and these rows never
// change, so an entry can never go out of date.
//
// The cache can only skip decoding, never a check: which certificates
// answer a need is still read from SQLite on every request, freshness
// against the current source is still checked per request (classify), and
// only rows read back from the certificates table — certified evidence —
// are ever inserted. Nothing rejected or stale is stored there, and a
// certificate that went stale is still classified stale on every use.
type storeCache struct {
	evidence *lru.Cache[string, Evidence] // certificate_id → artifact evidence
	// definitions are the definition ids known to be stored.
	definitions sync.Map
}

// evidenceCacheSize bounds the decoded evidence kept (entries are small:
// a proposal, its certificate and claims).
const evidenceCacheSize = 4096

func newStoreCache() *storeCache {
	c, err := lru.New[string, Evidence](evidenceCacheSize)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return &storeCache{evidence: c}
}

// getEvidence returns a copy of the cached evidence of a certificate.
func (c *storeCache) getEvidence(certID string) (Evidence, bool) {
	ev, ok := c.evidence.Get(certID)
	if !ok {
		return Evidence{}, false
	}
	return ev.clone(), true
}

// putEvidence caches evidence read back from the store.
func (c *storeCache) putEvidence(ev Evidence) { c.evidence.Add(ev.CertificateID, ev.clone()) }

// clone deep-copies ev, so a caller can never edit a cached entry.
func (ev Evidence) clone() Evidence {
	out := ev
	out.Proposal.Steps = slices.Clone(ev.Proposal.Steps)
	out.Proposal.Tests = slices.Clone(ev.Proposal.Tests)
	c := &out.Certificate
	c.Satisfies.Polarity = slices.Clone(c.Satisfies.Polarity)
	c.Satisfies.Selection = slices.Clone(c.Satisfies.Selection)
	c.Satisfies.Completeness = slices.Clone(c.Satisfies.Completeness)
	c.Satisfies.Granularity = slices.Clone(c.Satisfies.Granularity)
	c.Dependencies = slices.Clone(c.Dependencies)
	c.Cited = slices.Clone(c.Cited)
	c.ClaimIDs = slices.Clone(c.ClaimIDs)
	c.Notes = slices.Clone(c.Notes)
	out.Claims = slices.Clone(ev.Claims)
	return out
}
