package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// demoChange is the part of a lifecycle scenario's request (fixtures/
// lifecycle) that needle change start takes as flags.
type demoChange struct {
	Task     string   `json:"task"`
	Criteria []string `json:"acceptance_criteria"`
	Scopes   []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"scopes"`
	Constraints struct {
		MaxFiles int      `json:"max_files"`
		Notes    []string `json:"notes"`
	} `json:"constraints"`
}

var lifecycleIDRE = regexp.MustCompile(`lcy_[0-9a-f]{24}`)

// lifecycleStep runs the change of fixtures/lifecycle/verified.json (the
// one frozen/lifecycle/verified recorded) to awaiting approval.
func (d *demoRun) lifecycleStep() error {
	d.say("\n5. A change lifecycle: explore (the need answered by a worker), implement (a patch in a")
	d.say("   disposable checkout), test (Needle runs the certified test plan in codex's sandbox), review,")
	d.say("   verify. It stops awaiting your approval; nothing is written to repo/ until you approve and apply.")
	// The lifecycle's sessions were recorded on their own: served beside
	// the evidence worker's, two would begin alike and the replay would
	// refuse them as ambiguous.
	if _, err := d.needle("config", "set", "--data-dir", "data", "codex.command", d.replayCommand(d.self, "lifecycle", "verified")); err != nil {
		return err
	}
	start, err := d.changeStartArgs()
	if err != nil {
		return err
	}
	out, err := d.needle(start...)
	if err != nil {
		return err
	}
	id := lifecycleIDRE.FindString(out)
	if id == "" {
		return fmt.Errorf("step 5: change start printed no lifecycle id:\n%s", out)
	}
	if out, err = d.needle("change", "run", "--repository", "repo", "--data-dir", "data", id); err != nil {
		return err
	}
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "apply/") || strings.HasPrefix(t, "test ") || strings.HasPrefix(t, "verification ") || strings.HasPrefix(t, "next:") {
			d.say("   %s", t)
		}
	}
	if !strings.Contains(out, "apply/awaiting_approval") {
		return fmt.Errorf("step 5: want the lifecycle awaiting approval, got:\n%s", out)
	}
	if out, err = d.needle("change", "diff", "--repository", "repo", "--data-dir", "data", id); err != nil {
		return err
	}
	d.say("%s", indent(out, "   | "))
	if st, err := git(d.ctx, filepath.Join(d.dir, "repo"), "status", "--porcelain"); err != nil || st != "" {
		return fmt.Errorf("step 5: repo/ changed before any approval: %q %v", st, err)
	}
	d.say("   → awaiting_approval: tests passed, the verifier verified; repo/ is untouched until")
	d.say("     needle change approve (the line above: it shows the patch and asks) and needle change apply.")
	return nil
}

// changeStartArgs writes the scenario's test plan and need into the demo
// directory, certifies the plan with evidence propose, and returns the
// change start command line.
func (d *demoRun) changeStartArgs() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(d.o.root, "fixtures", "lifecycle", "verified.json"))
	if err != nil {
		return nil, err
	}
	var sc lifecycleScenario
	var ch demoChange
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, fmt.Errorf("fixtures/lifecycle/verified.json: %w", err)
	}
	if err := json.Unmarshal(sc.Request, &ch); err != nil || len(sc.TestPlans) != 1 || len(sc.Needs) != 1 {
		return nil, fmt.Errorf("fixtures/lifecycle/verified.json: want a request, one test plan and one need (%v)", err)
	}
	for name, raw := range map[string][]byte{"plan.json": sc.TestPlans[0], "change-need.json": sc.Needs[0]} {
		if err := os.WriteFile(filepath.Join(d.dir, name), raw, 0o644); err != nil {
			return nil, err
		}
	}
	out, err := d.needle("evidence", "propose", "--repository", "repo", "--data-dir", "data", "plan.json")
	if err != nil {
		return nil, err
	}
	var p struct {
		Status     string `json:"status"`
		ArtifactID string `json:"artifact_id"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Status != "certified" {
		return nil, fmt.Errorf("step 5: the test plan was not certified: %s", out)
	}
	d.say("   test plan certified: %s (its test ran and reaches the code)", p.ArtifactID)
	args := []string{"change", "start", "--repository", "repo", "--data-dir", "data", "--task", ch.Task}
	for _, c := range ch.Criteria {
		args = append(args, "--criterion", c)
	}
	for _, s := range ch.Scopes {
		args = append(args, "--scope", s.Path)
	}
	if ch.Constraints.MaxFiles > 0 {
		args = append(args, "--max-files", strconv.Itoa(ch.Constraints.MaxFiles))
	}
	for _, n := range ch.Constraints.Notes {
		args = append(args, "--note", n)
	}
	return append(args, "--test-plan", p.ArtifactID, "--need", "change-need.json"), nil
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
