package product

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/safetext"
	"github.com/needle-dev/needle/product/lifecycle"
)

// DecodeChangeRequest decodes and checks a prepare_change request with the
// strict decoder of need requests (duplicate keys, unknown fields, wrong
// types, trailing data, size and depth are errors). Errors are
// KindInvalidInput with the JSON path; nothing is stored.
func DecodeChangeRequest(data []byte) (changeRequest, error) {
	root, err := parseJSONTree(data)
	if err != nil {
		return changeRequest{}, err
	}
	var r changeRequest
	strings := func(dst *[]string) func(jsonValue, string) error {
		return func(v jsonValue, p string) error { return bindStrings(v, p, dst) }
	}
	err = bindObject(root, "$", map[string]func(jsonValue, string) error{
		"task":                func(v jsonValue, p string) error { return bindString(v, p, &r.Task) },
		"acceptance_criteria": strings(&r.Criteria),
		"scopes": func(v jsonValue, p string) error {
			if v.kind != jsonArray {
				return invalidf(opDecode, p, "want an array, got %s", v.kind)
			}
			r.Scopes = []pathScope{}
			for i, elem := range v.elems {
				var s pathScope
				err := bindObject(elem, fmt.Sprintf("%s[%d]", p, i), map[string]func(jsonValue, string) error{
					"path": func(v jsonValue, p string) error { return bindString(v, p, &s.Path) },
					"kind": func(v jsonValue, p string) error { return bindString(v, p, &s.Kind) },
				}, "path", "kind")
				if err != nil {
					return err
				}
				r.Scopes = append(r.Scopes, s)
			}
			return nil
		},
		"artifact_ids": strings(&r.ArtifactIDs),
		"claim_ids":    strings(&r.ClaimIDs),
		"constraints": func(v jsonValue, p string) error {
			return bindObject(v, p, map[string]func(jsonValue, string) error{
				"max_files": func(v jsonValue, p string) error { return bindCount(v, p, &r.Constraints.MaxFiles) },
				"max_bytes": func(v jsonValue, p string) error { return bindCount(v, p, &r.Constraints.MaxBytes) },
				"notes":     strings(&r.Constraints.Notes),
			})
		},
	}, "task", "acceptance_criteria", "scopes")
	if err != nil {
		return changeRequest{}, err
	}
	if err := checkChangeRequest(&r); err != nil {
		return changeRequest{}, err
	}
	return r, nil
}

// decodeChangeID decodes a verify_change request: {"change_id":"chg_…"}.
func decodeChangeID(data []byte) (string, error) {
	root, err := parseJSONTree(data)
	if err != nil {
		return "", err
	}
	var id string
	err = bindObject(root, "$", map[string]func(jsonValue, string) error{
		"change_id": func(v jsonValue, p string) error { return bindString(v, p, &id) },
	}, "change_id")
	if err != nil {
		return "", err
	}
	if !changeIDPattern.MatchString(id) {
		return "", invalidf(opChange, "change_id", "malformed change id %q; want chg_<24 hex>", id)
	}
	return id, nil
}

func bindStrings(v jsonValue, p string, dst *[]string) error {
	if v.kind != jsonArray {
		return invalidf(opDecode, p, "want an array, got %s", v.kind)
	}
	out := make([]string, 0, len(v.elems))
	for i, elem := range v.elems {
		var s string
		if err := bindString(elem, fmt.Sprintf("%s[%d]", p, i), &s); err != nil {
			return err
		}
		out = append(out, s)
	}
	*dst = out
	return nil
}

// bindCount binds a positive integer written without fraction or exponent.
func bindCount(v jsonValue, p string, dst *int) error {
	if v.kind != jsonNumber {
		return invalidf(opDecode, p, "want an integer, got %s", v.kind)
	}
	n, err := strconv.ParseInt(v.str, 10, 32)
	if err != nil || n < 1 {
		return invalidf(opDecode, p, "want a positive integer, got %s", v.str)
	}
	*dst = int(n)
	return nil
}

const opChange = "change.decode"

// checkChangeRequest validates the values of a decoded request and
// normalizes it: scopes and ids sorted and unique, limits filled in.
func checkChangeRequest(r *changeRequest) error {
	if err := checkText(r.Task, "task", 1, maxTaskChars); err != nil {
		return err
	}
	if len(r.Criteria) < 1 || len(r.Criteria) > maxCriteria {
		return invalidf(opChange, "acceptance_criteria", "want 1 to %d acceptance criteria, got %d", maxCriteria, len(r.Criteria))
	}
	for i, c := range r.Criteria {
		if err := checkText(c, fmt.Sprintf("acceptance_criteria[%d]", i), 1, maxCriterionChars); err != nil {
			return err
		}
	}
	if err := checkChangeScopes(r); err != nil {
		return err
	}
	if err := checkChangeIDs(r); err != nil {
		return err
	}
	return checkChangeConstraints(&r.Constraints)
}

// checkChangeScopes checks the path scopes and sorts them, unique and in
// NFC.
func checkChangeScopes(r *changeRequest) error {
	if len(r.Scopes) < 1 || len(r.Scopes) > maxScopes {
		return invalidf(opChange, "scopes", "want 1 to %d path scopes, got %d", maxScopes, len(r.Scopes))
	}
	for i, s := range r.Scopes {
		p := fmt.Sprintf("scopes[%d]", i)
		if s.Kind != scopeExact && s.Kind != scopeSubtree {
			return invalidf(opChange, p+".kind", "unknown scope kind %q; want exact or subtree", s.Kind)
		}
		if err := checkScopePath(s.Path, s.Kind); err != nil {
			return invalidf(opChange, p+".path", "%v", err)
		}
		// Scopes are compared in NFC (inScope): "café" is one name however
		// its é is composed.
		r.Scopes[i].Path = norm.NFC.String(s.Path)
	}
	slices.SortFunc(r.Scopes, func(a, b pathScope) int { return strings.Compare(a.Kind+" "+a.Path, b.Kind+" "+b.Path) })
	r.Scopes = slices.Compact(r.Scopes)
	return nil
}

// checkChangeIDs checks the artifact and claim ids, in that order, and
// sorts them, unique and never nil.
func checkChangeIDs(r *changeRequest) error {
	for _, f := range []struct {
		name string
		ids  *[]string
	}{{"artifact_ids", &r.ArtifactIDs}, {"claim_ids", &r.ClaimIDs}} {
		name, ids := f.name, f.ids
		if len(*ids) > maxChangeRefs {
			return invalidf(opChange, name, "too many ids (%d); the limit is %d", len(*ids), maxChangeRefs)
		}
		for i, id := range *ids {
			if !contentid.Valid(id) {
				return invalidf(opChange, fmt.Sprintf("%s[%d]", name, i), "malformed id %q; want b3:<64 hex>", id)
			}
		}
		slices.Sort(*ids)
		*ids = slices.Compact(*ids)
		if *ids == nil {
			*ids = []string{}
		}
	}
	return nil
}

// checkChangeConstraints checks the patch's constraints and fills in the
// limits left at zero.
func checkChangeConstraints(c *changeConstraints) error {
	if c.MaxFiles < 0 || c.MaxFiles > maxPatchFiles {
		return invalidf(opChange, "constraints.max_files", "want 1 to %d, got %d", maxPatchFiles, c.MaxFiles)
	}
	if c.MaxBytes < 0 || c.MaxBytes > maxPatchBytes {
		return invalidf(opChange, "constraints.max_bytes", "want 1 to %d, got %d", maxPatchBytes, c.MaxBytes)
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = maxPatchFiles
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = maxPatchBytes
	}
	if len(c.Notes) > maxConstraintNotes {
		return invalidf(opChange, "constraints.notes", "too many notes (%d); the limit is %d", len(c.Notes), maxConstraintNotes)
	}
	for i, n := range c.Notes {
		if err := checkText(n, fmt.Sprintf("constraints.notes[%d]", i), 1, maxNoteChars); err != nil {
			return err
		}
	}
	if c.Notes == nil {
		c.Notes = []string{}
	}
	return nil
}

// checkText checks a free-text field by the text rule (safetext): valid
// UTF-8 with no control, format (bidi) or separator character but "\n"
// and "\t", not blank, within its bound.
func checkText(s, p string, minLen, maxChars int) error {
	if err := safetext.CheckText(s, true); err != nil {
		return invalidf(opChange, p, "%v", err)
	}
	switch {
	case minLen > 0 && strings.TrimSpace(s) == "":
		return invalidf(opChange, p, "empty text")
	case utf8.RuneCountInString(s) > maxChars:
		return invalidf(opChange, p, "too long (%d characters); the limit is %d characters (Unicode code points)", utf8.RuneCountInString(s), maxChars)
	}
	return nil
}

// checkScopePath accepts a path by the repository-path rule (safetext: clean,
// relative, slash-separated, no control, format or separator character, no
// component that is .git on any file system). "." is allowed for a subtree
// only.
func checkScopePath(p, kind string) error {
	if p == "." && kind == scopeSubtree {
		return safetext.CheckRepoPath(p)
	}
	return lifecycle.CheckPath(p)
}
