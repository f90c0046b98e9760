package product

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds of a prepare_change request. Like the need bounds they are part of
// the MCP contract: the inputSchema advertises the same numbers.
const (
	// MaxChangeRequestBytes bounds a prepare_change request as JSON text.
	MaxChangeRequestBytes = 64 << 10
	// MaxCriteria bounds the acceptance criteria (at least one).
	MaxCriteria = 8
	// MaxCriterionBytes bounds one acceptance criterion (UTF-8 bytes).
	MaxCriterionBytes = 512
	// MaxScopes bounds the path scopes (at least one).
	MaxScopes = 16
	// MaxScopePathBytes bounds one scope path.
	MaxScopePathBytes = 512
	// MaxChangeRefs bounds artifact_ids and claim_ids each.
	MaxChangeRefs = 16
	// MaxConstraintNotes bounds constraints.notes; MaxNoteBytes one note.
	MaxConstraintNotes = 4
	MaxNoteBytes       = 256
	// MaxPatchFiles bounds the files one patch may touch (constraints.max_files
	// may lower it); MaxPatchBytes bounds the new content of one patch
	// (constraints.max_bytes may lower it).
	MaxPatchFiles = 16
	MaxPatchBytes = 256 << 10
)

// Scope kinds: an exact file path, or a directory subtree.
const (
	ScopeExact   = "exact"
	ScopeSubtree = "subtree"
)

// ChangeRequest is a prepare_change request as decoded.
type ChangeRequest struct {
	Task        string            `json:"task"`
	Criteria    []string          `json:"acceptance_criteria"`
	Scopes      []PathScope       `json:"scopes"`
	ArtifactIDs []string          `json:"artifact_ids"`
	ClaimIDs    []string          `json:"claim_ids"`
	Constraints ChangeConstraints `json:"constraints"`
}

// PathScope is one path the patch worker may write: a file (exact) or
// every file below a directory (subtree; "." is the whole repository).
type PathScope struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// ChangeConstraints bound a patch further; zero values take the maxima.
type ChangeConstraints struct {
	MaxFiles int      `json:"max_files"`
	MaxBytes int      `json:"max_bytes"`
	Notes    []string `json:"notes"`
}

var b3Pattern = regexp.MustCompile(`^b3:[0-9a-f]{64}$`)

// ChangeIDPattern is the syntax of an opaque change id.
var ChangeIDPattern = regexp.MustCompile(`^chg_[0-9a-f]{24}$`)

const opChange = "change.decode"

// checkChangeRequest validates the values of a decoded request and
// normalizes it: scopes and ids sorted and unique, limits filled in.
func checkChangeRequest(r *ChangeRequest) error {
	if err := checkText(r.Task, "task", 1, MaxTaskBytes); err != nil {
		return err
	}
	if len(r.Criteria) < 1 || len(r.Criteria) > MaxCriteria {
		return invalidf(opChange, "acceptance_criteria", "want 1 to %d acceptance criteria, got %d", MaxCriteria, len(r.Criteria))
	}
	for i, c := range r.Criteria {
		if err := checkText(c, fmt.Sprintf("acceptance_criteria[%d]", i), 1, MaxCriterionBytes); err != nil {
			return err
		}
	}
	if len(r.Scopes) < 1 || len(r.Scopes) > MaxScopes {
		return invalidf(opChange, "scopes", "want 1 to %d path scopes, got %d", MaxScopes, len(r.Scopes))
	}
	for i, s := range r.Scopes {
		p := fmt.Sprintf("scopes[%d]", i)
		if s.Kind != ScopeExact && s.Kind != ScopeSubtree {
			return invalidf(opChange, p+".kind", "unknown scope kind %q; want exact or subtree", s.Kind)
		}
		if err := checkScopePath(s.Path, s.Kind); err != nil {
			return invalidf(opChange, p+".path", "%v", err)
		}
	}
	slices.SortFunc(r.Scopes, func(a, b PathScope) int { return strings.Compare(a.Kind+" "+a.Path, b.Kind+" "+b.Path) })
	r.Scopes = slices.Compact(r.Scopes)
	for name, ids := range map[string]*[]string{"artifact_ids": &r.ArtifactIDs, "claim_ids": &r.ClaimIDs} {
		if len(*ids) > MaxChangeRefs {
			return invalidf(opChange, name, "too many ids (%d); the limit is %d", len(*ids), MaxChangeRefs)
		}
		for i, id := range *ids {
			if !b3Pattern.MatchString(id) {
				return invalidf(opChange, fmt.Sprintf("%s[%d]", name, i), "malformed id %q; want b3:<64 hex>", id)
			}
		}
		slices.Sort(*ids)
		*ids = slices.Compact(*ids)
		if *ids == nil {
			*ids = []string{}
		}
	}
	c := &r.Constraints
	if c.MaxFiles < 0 || c.MaxFiles > MaxPatchFiles {
		return invalidf(opChange, "constraints.max_files", "want 1 to %d, got %d", MaxPatchFiles, c.MaxFiles)
	}
	if c.MaxBytes < 0 || c.MaxBytes > MaxPatchBytes {
		return invalidf(opChange, "constraints.max_bytes", "want 1 to %d, got %d", MaxPatchBytes, c.MaxBytes)
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = MaxPatchFiles
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = MaxPatchBytes
	}
	if len(c.Notes) > MaxConstraintNotes {
		return invalidf(opChange, "constraints.notes", "too many notes (%d); the limit is %d", len(c.Notes), MaxConstraintNotes)
	}
	for i, n := range c.Notes {
		if err := checkText(n, fmt.Sprintf("constraints.notes[%d]", i), 1, MaxNoteBytes); err != nil {
			return err
		}
	}
	if c.Notes == nil {
		c.Notes = []string{}
	}
	return nil
}

// checkText checks a free-text field: valid UTF-8 (the decoder already
// proved that), not blank, within its byte bound.
func checkText(s, p string, minLen, maxBytes int) error {
	switch {
	case minLen > 0 && strings.TrimSpace(s) == "":
		return invalidf(opChange, p, "empty text")
	case len(s) > maxBytes:
		return invalidf(opChange, p, "too long (%d bytes); the limit is %d", len(s), maxBytes)
	case !utf8.ValidString(s):
		return invalidf(opChange, p, "invalid UTF-8")
	}
	return nil
}

// checkScopePath accepts a clean, relative, slash-separated path that does
// not name git's metadata. "." is allowed for a subtree only.
func checkScopePath(p, kind string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case len(p) > MaxScopePathBytes:
		return fmt.Errorf("path too long (%d bytes); the limit is %d", len(p), MaxScopePathBytes)
	case p == ".":
		if kind != ScopeSubtree {
			return fmt.Errorf(`"." can only be a subtree scope`)
		}
		return nil
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q is not a relative slash path", p)
	case path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q is not clean and inside the repository", p)
	case gitPath(p):
		return fmt.Errorf("path %q names git metadata", p)
	}
	return nil
}

// gitPath reports whether a slash path has a component that is git
// metadata on some file system: ".git" in any case, its 8.3 short name, or
// either with the trailing dots and spaces Windows drops.
func gitPath(p string) bool {
	for _, part := range strings.Split(p, "/") {
		name := strings.ToLower(strings.TrimRight(part, ". "))
		if name == ".git" || name == "git~1" {
			return true
		}
	}
	return false
}

// inScope reports whether a repository path is one the scopes declare.
func inScope(scopes []PathScope, p string) bool {
	for _, s := range scopes {
		switch {
		case s.Kind == ScopeExact && s.Path == p:
			return true
		case s.Kind == ScopeSubtree && (s.Path == "." || strings.HasPrefix(p, s.Path+"/")):
			return true
		}
	}
	return false
}

// newChangeID returns a fresh opaque change id.
func newChangeID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chg_" + hex.EncodeToString(b[:])
}
