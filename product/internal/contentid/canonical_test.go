package contentid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// canonicalTree is the reference canonical form: decode into an any tree
// (numbers as json.Number), put every string in NFC, encode again. It was
// the implementation; canonicalize must give the same bytes without the
// tree. collided reports two keys of one object with the same NFC form,
// whose outcome the tree leaves to map iteration.
func canonicalTree(raw []byte) (out []byte, collided bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, false, err
	}
	var normalize func(v any) any
	normalize = func(v any) any {
		switch v := v.(type) {
		case string:
			return norm.NFC.String(v)
		case []any:
			for i := range v {
				v[i] = normalize(v[i])
			}
			return v
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, x := range v {
				n := norm.NFC.String(k)
				if _, dup := out[n]; dup {
					collided = true
				}
				out[n] = normalize(x)
			}
			return out
		}
		return v
	}
	out, err = marshal(normalize(tree))
	return out, collided, err
}

// randomString mixes ASCII, what encoding/json escapes, combining marks
// (not NFC), other non-ASCII runes and invalid UTF-8.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\r", "\x01", "\x1f", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "é", "e\u0301", "\u0301", "Å", "A\u030a", "日本", "\U0001F600", "\xff", "\xc3", "\ufffd", "/"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case k == 0 && depth < 4:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	case k == 1 && depth < 4:
		var a []any
		for range r.IntN(5) {
			a = append(a, randomValue(r, depth+1))
		}
		return a
	case k == 2:
		return r.NormFloat64() * 1e6
	case k == 3:
		return []any{r.Int64(), -r.IntN(10), 1e21, 1e-7, 0.1}
	case k == 4:
		return r.IntN(2) == 0
	case k == 5:
		return nil
	case k == 6:
		return json.RawMessage(fmt.Sprintf(`{"z": [1, 2.50, -0, 1E5], "a" : "%s"}`, "x"))
	}
	return randomString(r)
}

// TestCanonicalize_SameAsTree holds canonicalize to the reference on
// random values and on structs (whose fields encoding/json writes in
// declaration order, not sorted).
func TestCanonicalize_SameAsTree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type inner struct {
		Z string `json:"z"`
		A []any  `json:"a"`
	}
	type outer struct {
		Text  string         `json:"text"`
		In    inner          `json:"in"`
		Map   map[string]any `json:"map"`
		Empty []string       `json:"empty"`
		Nil   []string       `json:"nil"`
	}
	values := []any{outer{Text: "line 1\nline 2\tcafe\u0301 <a&b>", In: inner{"z", []any{1, "x"}}, Empty: []string{}}}
	for range 5000 {
		values = append(values, randomValue(r, 0))
	}
	for _, v := range values {
		raw, err := marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, collided, err := canonicalTree(raw)
		if err != nil {
			t.Fatal(err)
		}
		if collided {
			continue
		}
		got, err := canonicalize(raw)
		if err != nil {
			t.Fatalf("canonicalize(%s): %v", raw, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonicalize(%s)\n got %s\nwant %s", raw, got, want)
		}
	}
}

// FuzzCanonicalize holds canonicalize to the reference on any valid JSON.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"cafe\u0301"`, `{"a":1,"a":2}`, `[1e5,-0,0.50]`,
		`{"k\n":"\u00e9","k\"":"\ud83d\ude00"}`, `"\u2028\u0001\ufffd"`, ` { "x" : [ ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		want, collided, err := canonicalTree(data)
		if err != nil || collided {
			return
		}
		got, err := canonicalize(data)
		if err != nil {
			t.Fatalf("canonicalize(%q): %v", data, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonicalize(%q)\n got %s\nwant %s", data, got, want)
		}
	})
}

func BenchmarkCanonical(b *testing.B) {
	v := map[string]any{"context": strings.Repeat("implementation_location: search.go:15-17 [artifact b3:0123]\n", 20),
		"ids": []string{"b3:aa", "b3:bb"}, "step": map[string]any{"ordinal": 3, "relation": "repeat"}, "hit": true}
	raw, _ := marshal(v)
	b.Run("tree", func(b *testing.B) {
		for b.Loop() {
			canonicalTree(raw)
		}
	})
	b.Run("canonicalize", func(b *testing.B) {
		for b.Loop() {
			canonicalize(raw)
		}
	})
}

// TestMemo checks that remembered ids are Of's, for equal and different
// values, past the memo's size.
func TestMemo(t *testing.T) {
	m := NewMemo(3)
	for i := range 20 {
		v := map[string]any{"n": i % 5, "s": "cafe\u0301"}
		got, err := m.Of("needle.test.v1", v)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := Of("needle.test.v1", v); got != want {
			t.Fatalf("Memo.Of = %s, Of = %s", got, want)
		}
		if other, _ := m.Of("needle.other.v1", v); other == got {
			t.Fatal("the memo ignores the tag")
		}
	}
}
