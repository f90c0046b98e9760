// Package schema builds JSON Schemas as the generic maps encoding/json
// writes: closed object schemas, strict ones (every property required, as
// strict structured outputs want) and string enums. It is the one builder
// of the product's MCP input and output schemas and of the workers'
// outputSchemas. Maps encode with sorted keys, so a schema's JSON does not
// depend on how it was built.
package schema

import "slices"

// Object is a closed object schema (additionalProperties false) with the
// given properties; required, when given, is kept in the order given.
func Object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// Strict is a closed object schema whose every property is required, in
// sorted order.
func Strict(props map[string]any) map[string]any {
	return Object(props, sortedKeys(props)...)
}

// Enum is a string schema allowing exactly values, in the order given.
func Enum[T ~string](values ...T) map[string]any {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	return map[string]any{"type": "string", "enum": names}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
