package codexhook

import (
	"fmt"

	"github.com/needle-dev/needle/product/internal/tomlstr"
)

// ConfigFacts is what an installer reads of a codex config.toml.
type ConfigFacts struct {
	// TOMLHooks: the file defines hooks under [hooks] (beside
	// hooks.json, for which codex warns "prefer a single representation").
	TOMLHooks bool
	// TrustedProjects are the project roots with trust_level "trusted":
	// codex reads a project's .codex/hooks.json only for those.
	TrustedProjects map[string]bool
}

// InspectConfig reads the facts of the config.toml at path (a missing file
// has none). It fails, with a *FileError, where Trust would refuse to edit
// the file, so an installer can find out before it writes anything.
func InspectConfig(path string) (ConfigFacts, error) {
	_, data, _, _, err := readTarget(path)
	if err != nil {
		return ConfigFacts{}, err
	}
	doc, err := decodeTOML(data)
	if err != nil {
		return ConfigFacts{}, &FileError{path, "not valid TOML: " + err.Error()}
	}
	if inlineHooks(data) {
		return ConfigFacts{}, &FileError{path, "hooks or hooks.state is an inline table, which cannot be extended"}
	}
	facts := ConfigFacts{TrustedProjects: map[string]bool{}}
	if hooks, ok := doc["hooks"].(map[string]any); ok {
		for k := range hooks {
			facts.TOMLHooks = facts.TOMLHooks || k != "state"
		}
	}
	if projects, ok := doc["projects"].(map[string]any); ok {
		for root, p := range projects {
			if t, ok := p.(map[string]any); ok && t["trust_level"] == "trusted" {
				facts.TrustedProjects[root] = true
			}
		}
	}
	return facts, nil
}

// ProjectLine is the config.toml table that makes codex trust a project.
func ProjectLine(root string) string {
	return fmt.Sprintf("[projects.%s]\ntrust_level = \"trusted\"", tomlstr.Quote(root))
}
