package schema

import (
	"encoding/json"
	"testing"
)

func TestBuilders(t *testing.T) {
	type kind string
	for _, tc := range []struct {
		name string
		got  any
		want string
	}{
		{"ObjectNoRequired", Object(map[string]any{"a": map[string]any{"type": "string"}}),
			`{"additionalProperties":false,"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"ObjectRequiredAsGiven", Object(map[string]any{"a": 1, "b": 2}, "b", "a"),
			`{"additionalProperties":false,"properties":{"a":1,"b":2},"required":["b","a"],"type":"object"}`},
		{"StrictSorted", Strict(map[string]any{"z": 1, "a": 2, "m": 3}),
			`{"additionalProperties":false,"properties":{"a":2,"m":3,"z":1},"required":["a","m","z"],"type":"object"}`},
		{"Enum", Enum(kind("x"), kind("a")), `{"enum":["x","a"],"type":"string"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.got)
			if err != nil || string(b) != tc.want {
				t.Errorf("got %s (%v), want %s", b, err, tc.want)
			}
		})
	}
}
