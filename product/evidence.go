package product

import (
	"slices"
	"sort"
)

// dependencyKind is what a dependency's digest is of.
type dependencyKind string

const (
	dependencyFile dependencyKind = "file" // a file's content
	dependencyDir  dependencyKind = "dir"  // a directory's listing (exhaustive or negative evidence)
)

// dependency is one thing a certificate depends on: a file's content digest
// or a directory listing's digest.
type dependency struct {
	Kind   dependencyKind `json:"kind"`
	Path   string         `json:"path"`
	Digest string         `json:"digest"`
}

// certificateBody is the canonical content of an artifact certificate; its
// content id is the certificate_id. Nothing in it depends on where the
// repository lives: dependencies are repository-relative paths with content
// digests, so two clones that certify the same evidence at the same source
// make the same certificate.
type certificateBody struct {
	Scope            string          `json:"scope"`
	ArtifactID       string          `json:"artifact_id"`
	ValidatorVersion string          `json:"validator_version"`
	Level            string          `json:"level"`
	Satisfies        satisfies       `json:"satisfies"`
	Dependencies     []dependency    `json:"dependencies"`
	Cited            []citedLocation `json:"cited"`
	ClaimIDs         []string        `json:"claim_ids"`
	Notes            []string        `json:"notes"`
	// Reach is how focused_tests evidence reaches its subject: executed or
	// lexical (the weakest of its tests); Tests says, per test, how Needle
	// knows it and the command Needle derived to run it. For runtime_flow
	// evidence it is how the flow is known, executed or static, and Flow
	// says by which run.
	Reach string      `json:"reach,omitempty"`
	Tests []testProof `json:"tests,omitempty"`
	// Links are, for runtime_flow evidence, the callees (go/types full
	// names) that link each step to the next; nil for a lexical link.
	Links [][]string `json:"links,omitempty"`
	Flow  *flowProof `json:"flow,omitempty"`
}

// Evidence is a certified artifact with its newest certificate, as the
// resolver sees it.
type Evidence struct {
	ArtifactID    string
	CertificateID string
	Proposal      proposal
	Certificate   certificateBody
	Claims        []claimAt
	Seq           int64 // insertion order of the certificate: newer is larger
}

// uncertifiable says why no proposal can ever be certified for obligation
// ob about a subject of kind k ("" when one can). It is the one table the
// validators and the resolver share: the validators refuse such a proposal
// before reading anything, and the resolver never spends a worker on such
// an obligation (it stays missing, with this reason).
func uncertifiable(k subjectKind, ob obligation) string {
	switch {
	case k == subjectBehavior:
		return "a behavior subject cannot be verified by trusted code"
	case ob.Facets.Polarity == "negative":
		return "no proposal can certify an absence (negative polarity) yet"
	}
	return ""
}

// certify turns a certified validation into its artifact id and certificate.
func certify(v *validation) (artifactID string, body certificateBody, certID string) {
	artifactID = mustID(tagArtifact, v.Proposal)
	body = certificateBody{
		Scope: "artifact", ArtifactID: artifactID, ValidatorVersion: validatorVersion,
		Level: v.Level, Satisfies: v.Satisfies, Cited: v.Cited, Notes: append([]string{}, v.Notes...),
		Reach: v.Reach, Tests: v.Tests, Links: v.Links, Flow: v.Flow,
	}
	for p, d := range v.Files {
		body.Dependencies = append(body.Dependencies, dependency{dependencyFile, p, d})
	}
	for p, d := range v.Dirs {
		body.Dependencies = append(body.Dependencies, dependency{dependencyDir, p, d})
	}
	sort.Slice(body.Dependencies, func(i, j int) bool {
		a, b := body.Dependencies[i], body.Dependencies[j]
		return string(a.Kind)+"\x00"+a.Path < string(b.Kind)+"\x00"+b.Path
	})
	for _, c := range v.Claims {
		body.ClaimIDs = append(body.ClaimIDs, c.ID)
	}
	sort.Strings(body.ClaimIDs)
	return artifactID, body, mustID(tagCertificate, body)
}

// satisfies lists, per facet, the values a certified artifact satisfies; an
// obligation is satisfied when each facet it constrains has its value here.
type satisfies struct {
	Kind         CapabilityKind `json:"kind"`
	Polarity     []string       `json:"polarity,omitempty"`
	Selection    []string       `json:"selection,omitempty"`
	Scenario     string         `json:"scenario,omitempty"`
	Completeness []string       `json:"completeness,omitempty"`
	Granularity  []string       `json:"granularity,omitempty"`
}

// satisfies reports whether an artifact with these facets meets ob.
func (s satisfies) satisfies(ob obligation) bool {
	if s.Kind != ob.Kind {
		return false
	}
	in := func(v string, set []string) bool { return v == "" || slices.Contains(set, v) }
	f := ob.Facets
	return in(f.Polarity, s.Polarity) && in(f.Selection, s.Selection) &&
		(f.Scenario == "" || f.Scenario == s.Scenario) &&
		in(f.Completeness, s.Completeness) && in(f.Granularity, s.Granularity)
}

// citedLocation is a span a certificate cites, with the exact text of the
// cited lines: proof replay looks for that text when the file changes.
type citedLocation struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Excerpt   string `json:"excerpt"`
}

// claimKind is the kind of fact a claim states.
type claimKind string

const (
	claimDeclared     claimKind = "declared"      // the subject (a symbol or test) is declared here
	claimDefined      claimKind = "defined"       // the subject (a flag or key) is defined here (Detail: by what, how spelled)
	claimReads        claimKind = "reads"         // the subject's value (a flag or key) is read here (Detail: how)
	claimLiteral      claimKind = "literal"       // the subject (a flag or key) is named here, lexically
	claimFile         claimKind = "file"          // the subject is this file
	claimModule       claimKind = "module"        // the subject is the module of this go.mod
	claimCalls        claimKind = "calls"         // a flow step calls the next (Detail: the callee)
	claimTestReaches  claimKind = "test_reaches"  // a test reaches the subject (Detail: the test)
	claimTestMentions claimKind = "test_mentions" // a test names the subject, reach unproven (Detail: the test)
)

// Claim is an atomic fact drawn from a certified artifact. It carries no line
// numbers, so the same fact keeps its id when the code moves.
type Claim struct {
	Kind          claimKind `json:"kind"`
	Subject       Subject   `json:"subject"`
	Path          string    `json:"path"`
	ExcerptDigest string    `json:"excerpt_digest"`
	Detail        string    `json:"detail,omitempty"` // callee, test name, …
}

// claimAt is a claim and where the certificate found it.
type claimAt struct {
	Claim     Claim
	ID        string
	StartLine int
	EndLine   int
}

// needCertificateBody is the canonical content of a need certificate; like
// an artifact certificate's, it does not depend on where the repository
// lives.
type needCertificateBody struct {
	Scope     string           `json:"scope"`
	NeedID    string           `json:"need_id"`
	Members   []string         `json:"members"`
	Satisfied []CapabilityKind `json:"satisfied"`
}

// needCertificate binds the artifact certificates that answered a need
// into one certificate, with the union of their dependencies.
type needCertificate struct {
	ID           string
	Root         string // the checkout that stores it first; not part of the id
	Body         needCertificateBody
	Dependencies []dependency // sorted by kind and path
}

// newNeedCertificate is the need certificate of the choices that answered
// needID in root.
func newNeedCertificate(root, needID string, chosen []choice, satisfied []CapabilityKind) needCertificate {
	body := needCertificateBody{Scope: "need", NeedID: needID, Satisfied: satisfied}
	deps := map[dependency]bool{}
	for _, c := range chosen {
		if !slices.Contains(body.Members, c.Evidence.CertificateID) {
			body.Members = append(body.Members, c.Evidence.CertificateID)
		}
		for _, d := range c.Evidence.Certificate.Dependencies {
			deps[d] = true
		}
	}
	sort.Strings(body.Members)
	nc := needCertificate{ID: memoID(tagCertificate, body), Root: root, Body: body}
	for d := range deps {
		nc.Dependencies = append(nc.Dependencies, d)
	}
	sort.Slice(nc.Dependencies, func(i, j int) bool {
		a, b := nc.Dependencies[i], nc.Dependencies[j]
		return string(a.Kind)+a.Path < string(b.Kind)+b.Path
	})
	return nc
}
