package contentid

import (
	"regexp"
	"testing"
)

// FuzzValid holds Valid and Regexp to one rule.
func FuzzValid(f *testing.F) {
	f.Add(OfBytes("t", nil))
	f.Add("b3:" + "A" + OfBytes("t", nil)[4:])
	f.Add("b3:00")
	re := regexp.MustCompile("^" + Regexp + "$")
	f.Fuzz(func(t *testing.T, s string) {
		if Valid(s) != re.MatchString(s) {
			t.Fatalf("Valid(%q) = %v, the pattern says %v", s, Valid(s), re.MatchString(s))
		}
	})
}
