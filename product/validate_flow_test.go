package product

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func flowProposal(kind, name string, steps ...string) string {
	return fmt.Sprintf(`{"kind":"runtime_flow","subject":{"kind":%q,"name":%q},"scenario":"default","steps":[%s]}`, kind, name, strings.Join(steps, ","))
}

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func step(path string, start, end int, summary string) string {
	return fmt.Sprintf(`{"path":%q,"start_line":%d,"end_line":%d,"summary":%s}`, path, start, end, jsonText(summary))
}

// TestValidate_Flows: steps are linked by a callee go/types resolves — a
// call, a method value — declared in the next step; a callee that only
// shares the next step's name (goFlagSet.Parse against cli.Parse) or a call
// through an interface links nothing.
func TestValidate_Flows(t *testing.T) {
	repo := MustEvidenceRepo(t, true, nil)
	te := MustEngine(t, repo)
	decl := func(file, header string) (int, int) {
		_, s, e := declLines(t, repo, file, header)
		return s, e
	}
	launchS, launchE := decl("flow/flow.go", "func Launch(")
	startS, startE := decl("flow/flow.go", "func Start(")
	parseS, parseE := decl("command.go", "func Parse(")
	viaS, viaE := decl("flow/flow.go", "func Via(")
	addS, addE := decl("flow/flow.go", "func (l *Loader) Add(")
	dynS, dynE := decl("flow/flow.go", "func Dyn(")
	loadS, loadE := decl("flow/flow.go", "func (l *Loader) Load(")
	newS, newE := decl("command.go", "func NewCommand(")
	verbose := lineWith(t, repo, "command.go", `fs.BoolVar(&o.verbose, "verbose"`)
	res := te.checkVerdict(t, flowProposal("symbol", "Launch", step("./flow/flow.go", launchS, launchE, "launch"), step("command.go", parseS, parseE, "parse")), "certified", "a resolved call across packages")
	te.checkVerdict(t, flowProposal("symbol", "Via", step("flow/flow.go", viaS, viaE, "via"), step("flow/flow.go", addS, addE, "add")), "certified", "a method value")
	te.checkVerdict(t, flowProposal("cli_option", "--verbose", step("command.go", verbose, verbose, "define"), step("command.go", parseS, parseE, "x")), "rejected", "does not call a function declared in steps[1]")
	te.checkVerdict(t, flowProposal("symbol", "NewCommand", step("command.go", newS, newE, "define")), "certified", "one step holding the subject")
	te.checkVerdict(t, flowProposal("symbol", "Start", step("flow/flow.go", startS, startE, "start"), step("command.go", parseS, parseE, "parse")), "rejected", "does not call a function declared in steps[1]")
	te.checkVerdict(t, flowProposal("symbol", "Dyn", step("flow/flow.go", dynS, dynE, "dyn"), step("flow/flow.go", loadS, loadE, "load")), "rejected", "does not call a function declared in steps[1]")
	te.checkVerdict(t, flowProposal("symbol", "Launch", step("flow/flow.go", startS, startE, "start")), "rejected", "is not in the declaration of")
	if res.Status == "certified" {
		r := te.need(`{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Launch"},"required":[{"kind":"runtime_flow"}]}`)
		if !strings.Contains(r.Context, fmt.Sprintf("1. flow/flow.go:%d-%d; calls example.com/cli.Parse; worker's description (unverified): \"launch\"", launchS, launchE)) {
			t.Errorf("the context does not show the resolved link and the marked summary:\n%s", r.Context)
		}
	}
}
