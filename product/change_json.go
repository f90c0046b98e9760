package product

import (
	"fmt"
	"strconv"
)

// DecodeChangeRequest decodes and checks a prepare_change request with the
// strict decoder of need requests (duplicate keys, unknown fields, wrong
// types, trailing data, size and depth are errors). Errors are
// KindInvalidInput with the JSON path; nothing is stored.
func DecodeChangeRequest(data []byte) (ChangeRequest, error) {
	root, err := parseJSONTree(data)
	if err != nil {
		return ChangeRequest{}, err
	}
	var r ChangeRequest
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
			r.Scopes = []PathScope{}
			for i, elem := range v.elems {
				var s PathScope
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
		return ChangeRequest{}, err
	}
	if err := checkChangeRequest(&r); err != nil {
		return ChangeRequest{}, err
	}
	return r, nil
}

// DecodeChangeID decodes a verify_change request: {"change_id":"chg_…"}.
func DecodeChangeID(data []byte) (string, error) {
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
	if !ChangeIDPattern.MatchString(id) {
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
