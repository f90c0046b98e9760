package goevidence

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// declSrc holds one of each kind of declaration. Line numbers matter: the
// comment at the end of a line is its number.
const declSrc = `package p // 1

func Foo() {} // 3

type Set[T comparable] struct{ m map[T]bool } // 5

func (s *Set[T]) Add(v T) { // 7
	s.m[v] = true
} // 9

func (s Set[T]) Len() int { return len(s.m) } // 11

type Pair[K comparable, V any] struct{} // 13

func (p *Pair[K, V]) Put() {} // 15

type Value struct{} // 17

func (Value) Get() int { return 1 } // 19

func (v *Value) Set() {} // 21

const ( // 23
	A = 1
	B = 2 // 25
)

var ( // 28
	x, y int
	z    = "z" // 30
)

var Lone = 3 // 33

type ( // 35
	Alias = int
	Named struct { // 37
		F int
	} // 39
)

var Dup int // 42

func Dup() {} // 44

var // 46
Late = 1 // 47
`

// badSrc does not parse.
const badSrc = "package p\n\nfunc {\n"

func TestDeclarations(t *testing.T) {
	tests := []struct {
		name, decl string
		want       []Span
	}{
		{"Func", "Foo", []Span{{3, 3}}},
		{"PointerGenericReceiver", "Set.Add", []Span{{7, 9}}},
		{"ValueGenericReceiver", "Set.Len", []Span{{11, 11}}},
		{"TwoTypeParamReceiver", "Pair.Put", []Span{{15, 15}}},
		{"UnnamedValueReceiver", "Value.Get", []Span{{19, 19}}},
		{"PointerReceiver", "Value.Set", []Span{{21, 21}}},
		{"TypeNotSameNamedMethod", "Set", []Span{{5, 5}}},
		{"GroupedConstIsSpec", "B", []Span{{25, 25}}},
		{"MultiNameVar", "y", []Span{{29, 29}}},
		{"GroupedVar", "z", []Span{{30, 30}}},
		{"LoneVarWithKeyword", "Lone", []Span{{33, 33}}},
		{"GroupedAlias", "Alias", []Span{{36, 36}}},
		{"GroupedMultiLineType", "Named", []Span{{37, 39}}},
		{"DeclaredTwice", "Dup", []Span{{42, 42}, {44, 44}}},
		{"KeywordOnEarlierLine", "Late", []Span{{46, 47}}},
		{"MethodIsNotFunc", "Add", nil},
		{"WrongReceiver", "Value.Add", nil},
		{"FieldIsNotDecl", "F", nil},
		{"Missing", "Nope", nil},
		{"Empty", "", nil},
		{"Blank", "_", nil},
		{"TooManyDots", "Set.Add.x", nil},
		{"NoType", ".Add", nil},
		{"NoMethod", "Set.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Declarations("p.go", []byte(declSrc), tt.decl)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Declarations(%q) mismatch (-want +got):\n%s", tt.decl, diff)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		if _, err := Declarations("p.go", []byte(badSrc), "Foo"); err == nil {
			t.Error("Declarations of unparsable source: no error")
		}
	})
	t.Run("NilSourceIsNotReadFromDisk", func(t *testing.T) {
		if _, err := Declarations("decl_test.go", nil, "TestDeclarations"); err == nil {
			t.Error("Declarations of nil source: no error")
		}
	})
}

func TestDeclared(t *testing.T) {
	tests := []struct {
		name, decl string
		span       Span
		want       bool
	}{
		{"FuncNameLine", "Foo", Span{3, 3}, true},
		{"WideSpan", "Foo", Span{1, 100}, true},
		{"SpanEndsJustBefore", "Foo", Span{1, 2}, false},
		{"SpanStartsJustAfter", "Foo", Span{4, 10}, false},
		{"MethodNameLine", "Set.Add", Span{7, 7}, true},
		{"MethodBodyOnly", "Set.Add", Span{8, 9}, false},
		{"MultiNameVar", "y", Span{29, 29}, true},
		{"GroupKeywordOnly", "B", Span{23, 24}, false},
		{"MultiLineTypeBody", "Named", Span{38, 40}, false},
		{"SecondDeclaration", "Dup", Span{44, 44}, true},
		{"KeywordLineOnly", "Late", Span{46, 46}, false},
		{"NameLineAfterKeyword", "Late", Span{47, 47}, true},
		{"InvertedSpan", "Foo", Span{3, 2}, false},
		{"Missing", "Nope", Span{1, 100}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Declared("p.go", []byte(declSrc), tt.decl, tt.span)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Declared(%q, %v) = %v, want %v", tt.decl, tt.span, got, tt.want)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		if _, err := Declared("p.go", []byte(badSrc), "Foo", Span{1, 3}); err == nil {
			t.Error("Declared of unparsable source: no error")
		}
	})
}

func TestFuncAt(t *testing.T) {
	type result struct {
		Name string
		Span Span
		OK   bool
	}
	tests := []struct {
		name string
		line int
		want result
	}{
		{"Func", 3, result{"Foo", Span{3, 3}, true}},
		{"MethodBody", 8, result{"Set.Add", Span{7, 9}, true}},
		{"MethodLastLine", 9, result{"Set.Add", Span{7, 9}, true}},
		{"GenericValueReceiver", 11, result{"Set.Len", Span{11, 11}, true}},
		{"UnnamedReceiver", 19, result{"Value.Get", Span{19, 19}, true}},
		{"FuncSharingVarName", 44, result{"Dup", Span{44, 44}, true}},
		{"BlankLine", 10, result{}},
		{"TypeDecl", 5, result{}},
		{"ConstGroup", 24, result{}},
		{"BeforeFile", 0, result{}},
		{"AfterFile", 1000, result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, span, ok, err := FuncAt("p.go", []byte(declSrc), tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, result{name, span, ok}); diff != "" {
				t.Errorf("FuncAt(%d) mismatch (-want +got):\n%s", tt.line, diff)
			}
		})
	}
	t.Run("ErrParse", func(t *testing.T) {
		if _, _, _, err := FuncAt("p.go", []byte(badSrc), 3); err == nil {
			t.Error("FuncAt of unparsable source: no error")
		}
	})
}
