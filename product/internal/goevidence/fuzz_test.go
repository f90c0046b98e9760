package goevidence

import "testing"

// FuzzDeclarations feeds arbitrary source and names to every Go check. None
// may panic, and what Declarations returns must hold up under Declared.
func FuzzDeclarations(f *testing.F) {
	for _, src := range []string{declSrc, litSrc, renamedSrc, flowA, flowB, badSrc, "", "package p"} {
		f.Add(src, "Set.Add", 8)
	}
	f.Add(declSrc, "Dup", 44)
	f.Add(flowB, "searcher.run", 9)
	f.Add("package p\nfunc (*) M() {}\nfunc (a, b T) N() {}\n", "T.N", 2)
	f.Fuzz(func(t *testing.T, src, name string, line int) {
		spans, err := Declarations("f_test.go", []byte(src), name)
		if err != nil {
			return // only parsable sources reach the other checks
		}
		for _, s := range spans {
			if s.Start < 1 || s.End < s.Start {
				t.Fatalf("Declarations(%q) = bad span %v", name, s)
			}
			if ok, err := Declared("f_test.go", []byte(src), name, s); err != nil || !ok {
				t.Fatalf("Declared(%q, %v) = %v, %v for a span Declarations returned", name, s, ok, err)
			}
		}
		span := Span{line, line + 3}
		FuncAt("f_test.go", []byte(src), line)
		TestFunc("f_test.go", []byte(src), name)
		StringLiteral("f_test.go", []byte(src), []string{name}, span)
		Calls("f_test.go", []byte(src), span, "f_test.go", []byte(src), span)
		Reaches(map[string][]byte{"f_test.go": []byte(src)}, name, Target{Idents: []string{name}, Strings: []string{name}})
		LexicalWord([]byte(src), name, span)
	})
}
