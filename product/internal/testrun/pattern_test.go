package testrun

import "testing"

func TestRunPattern(t *testing.T) {
	for in, want := range map[string]string{
		"TestX":          "^TestX$",
		"TestX/sub":      "^TestX$/^sub$",
		"TestX/a+b/c_d":  `^TestX$/^a\+b$/^c_d$`,
		"TestX/[x]":      `^TestX$/^\[x\]$`,
		"TestÉté/cas#01": "^TestÉté$/^cas#01$",
	} {
		if got := RunPattern(in); got != want || !ValidTest(in) {
			t.Errorf("RunPattern(%q) = %q (valid %v), want %q", in, got, ValidTest(in), want)
		}
	}
	for _, in := range []string{"", "TestX/", "Testx y", "-test.v", "TestX\n", "BenchmarkX", "TestX.Y"} {
		if ValidTest(in) {
			t.Errorf("ValidTest(%q) = true", in)
		}
	}
}
