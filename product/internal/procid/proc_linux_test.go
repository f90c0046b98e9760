package procid

import "testing"

func TestParseStat(t *testing.T) {
	// The command name may hold ") " itself; fields count after the last ')'.
	line := "77 (a) b) S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 1 18446744073709551615"
	state, start, err := parseStat(77, line)
	if err != nil || state != "S" || start != "98765" {
		t.Fatalf("parseStat = %q, %q, %v; want S, 98765, nil", state, start, err)
	}
	for _, bad := range []string{"", "77 no paren", "77 (x) S 1 2"} {
		if _, _, err := parseStat(77, bad); err == nil {
			t.Errorf("parseStat(%q) = nil error", bad)
		}
	}
}
