package web

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// dtos are the contract's types by name, as src/api.ts names them.
var dtos = map[string]any{
	"Page": Page[int]{}, "Error": Error{}, "ErrorDetail": ErrorDetail{}, "Conflict": Conflict{},
	"Status": Status{}, "Subject": Subject{}, "ResolutionSummary": ResolutionSummary{},
	"EvidenceDetail": EvidenceDetail{}, "Artifact": Artifact{}, "Location": Location{}, "FlowStep": FlowStep{},
	"TestRef": TestRef{}, "Certificate": Certificate{}, "Dependency": Dependency{}, "Freshness": Freshness{},
	"Accounting": Accounting{}, "AccountingPoint": AccountingPoint{}, "LifecycleSummary": LifecycleSummary{},
	"LifecycleDetail": LifecycleDetail{}, "PhaseState": PhaseState{}, "Patch": Patch{}, "PatchFile": PatchFile{},
	"Verification": Verification{}, "Criterion": Criterion{}, "ApprovalState": ApprovalState{},
	"ApprovalDigests": ApprovalDigests{}, "ApprovalRequest": ApprovalRequest{}, "Approval": Approval{},
	"ApplyRequest": ApplyRequest{}, "CancelRequest": CancelRequest{}, "ApplyResult": ApplyResult{}, "ApplyState": ApplyState{}, "LifecycleEvent": LifecycleEvent{},
	"TestOutcome":         TestOutcome{},
	"LifecycleChange":     LifecycleChange{},
	"WorkerText":          WorkerText{},
	"AcceptanceCriterion": AcceptanceCriterion{}, "Diff": Diff{}, "DiffLine": DiffLine{}, "Review": Review{}, "Finding": Finding{},
}

// TestAPIMirror holds src/api.ts to api.go: the same interfaces with the
// same JSON field names, optional exactly where Go omits empty values.
func TestAPIMirror(t *testing.T) {
	src, err := os.ReadFile("src/api.ts")
	if err != nil {
		t.Fatal(err)
	}
	ts := parseInterfaces(string(src))
	for name, v := range dtos {
		fields, ok := ts[name]
		if !ok {
			t.Errorf("src/api.ts has no interface %s", name)
			continue
		}
		want := jsonFields(reflect.TypeOf(v))
		if got, w := keys(fields), keys(want); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: api.ts fields %v, api.go fields %v", name, got, w)
			continue
		}
		for f, opt := range want {
			if fields[f] != opt {
				t.Errorf("%s.%s: optional in api.ts %v, omitempty in api.go %v", name, f, fields[f], opt)
			}
		}
	}
	for name := range ts {
		if _, ok := dtos[name]; !ok {
			t.Errorf("src/api.ts interface %s has no Go DTO", name)
		}
	}
}

var (
	ifaceRE = regexp.MustCompile(`(?m)^export interface (\w+)(?:<\w+>)? \{\n((?:  .*\n)*)\}`)
	fieldRE = regexp.MustCompile(`^  (\w+)(\??): `)
)

// parseInterfaces returns interface → field → optional.
func parseInterfaces(src string) map[string]map[string]bool {
	out := make(map[string]map[string]bool)
	for _, m := range ifaceRE.FindAllStringSubmatch(src, -1) {
		fields := make(map[string]bool)
		for line := range strings.SplitSeq(strings.TrimSuffix(m[2], "\n"), "\n") {
			if f := fieldRE.FindStringSubmatch(line); f != nil {
				fields[f[1]] = f[2] == "?"
			}
		}
		out[m[1]] = fields
	}
	return out
}

// jsonFields returns a struct's JSON field → omitempty.
func jsonFields(t reflect.Type) map[string]bool {
	out := make(map[string]bool)
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = strings.Contains(opts, "omitempty")
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
