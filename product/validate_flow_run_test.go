package product

import "testing"

// TestScenarioTest reads test scenarios as models and Needle itself write
// them: anchored -run patterns keep their subtests.
func TestScenarioTest(t *testing.T) {
	for in, want := range map[string][3]string{
		"TestParseBasics":                               {"TestParseBasics", "", ""},
		"TestParseBasics()":                             {"TestParseBasics", "", ""},
		"TestParseBasics/env_only":                      {"TestParseBasics", "env_only", ""},
		"^TestParseBasics$/^env_only$":                  {"TestParseBasics", "env_only", ""},
		"go test . -run '^TestParseBasics$/^env_only$'": {"TestParseBasics", "env_only", ""},
		"go test ./ffcli -run '^TestA$/^b$/^c$'":        {"TestA", "b/c", "ffcli"},
		"TestA/with space in parse_test.go":             {"TestA", "with", "parse_test.go"},
		"run TestHelp from help_test.go":                {"TestHelp", "", "help_test.go"},
		"Testing the parser":                            {"", "", ""},
		"TestA and TestB":                               {"", "", ""},
		"go test -run 'TestParse$' ./...":               {"TestParse", "", ""},
	} {
		name, sub, hint := scenarioTest(in)
		if got := [3]string{name, sub, hint}; got != want {
			t.Errorf("scenarioTest(%q) = %q, want %q", in, got, want)
		}
	}
}
