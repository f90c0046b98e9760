// Package enum parses and lists the closed sets of string values the
// product's types name (statuses, phases, kinds): one rule for every enum.
package enum

import "strings"

// Parse returns the member of values spelled s.
func Parse[T ~string](values []T, s string) (T, bool) {
	for _, v := range values {
		if string(v) == s {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// List renders values for an error message: "a, b or c".
func List[T ~string](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = string(v)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
