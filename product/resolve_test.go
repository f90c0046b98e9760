package product

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestResolveTranscripts drives the pure resolver from the data-driven
// cases of testdata/resolve, raft style: a need as a client writes it
// (JSON), the classified candidates and the world in; the decision out.
// No store, no validator: what is tested is the resolver's own rules.
// Rewrite the expectations with go test -run TestResolveTranscripts -rewrite.
//
// Each case is one "resolve" directive, with arguments "worker" (a worker
// may be spawned) and bypass="why" (a limit forces a bypass). Its input
// is the need's JSON on the first line, then one candidate a line:
//
//	artifact ID KIND STATE [PATH:START-END] [key=value ...]
//	exact ID KIND STATE [PATH:START-END] [key=value ...]
//	claim ID STATE SUBJECT-KIND:NAME PATH:START-END
//
// artifact is the subject's own evidence, exact a member of the need's
// newest need certificate, claim a "declared" claim another artifact's
// certificate carries. STATE is fresh, replayed or stale. The keys are
// seq (certification order), polarity, selection, completeness and
// granularity (comma lists of the facet values the certificate
// satisfies), scenario, and steps (PATH:START-END>PATH:START-END, a
// flow's).
func TestResolveTranscripts(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "resolve"), func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "resolve" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			in, err := resolveCase(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return showDecision(resolve(in))
		})
	})
}

func resolveCase(d *datadriven.TestData) (resolveInput, error) {
	var in resolveInput
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "worker":
			in.Worker = true
		case "bypass":
			in.Bypass = strings.Join(a.Vals, " ")
		default:
			return in, fmt.Errorf("unknown argument %q", a.Key)
		}
	}
	lines := strings.Split(strings.TrimSpace(d.Input), "\n")
	need, err := compileJSON([]byte(lines[0]), AllRoutes())
	if err != nil {
		return in, fmt.Errorf("the need does not compile: %v", err)
	}
	in.Need = need
	for i, line := range lines[1:] {
		c, role, err := parseCandidate(line, need.IR.Subject, int64(i+1))
		if err != nil {
			return in, fmt.Errorf("line %d %q: %v", i+2, line, err)
		}
		switch role {
		case "artifact":
			in.Artifacts = append(in.Artifacts, c)
		case "exact":
			in.Exact, in.ExactCertID = append(in.Exact, c), "ncert"
		case "claim":
			in.ClaimSources = append(in.ClaimSources, c)
		}
	}
	return in, nil
}

func parseCandidate(line string, subject Subject, seq int64) (candidate, string, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return candidate{}, "", fmt.Errorf("want ROLE ID ...")
	}
	role, id := f[0], f[1]
	c := candidate{Evidence: Evidence{ArtifactID: id, CertificateID: "cert-" + id, Seq: seq}}
	c.Proposal.Subject = subject
	var rest []string
	switch role {
	case "artifact", "exact":
		kind, ok := parseCapabilityKind(f[2])
		if !ok || len(f) < 4 {
			return c, "", fmt.Errorf("want %s ID KIND STATE", role)
		}
		c.Proposal.Kind, c.Certificate.Satisfies.Kind, c.State = kind, kind, f[3]
		rest = f[4:]
	case "claim":
		if len(f) != 5 {
			return c, "", fmt.Errorf("want claim ID STATE KIND:NAME PATH:START-END")
		}
		c.State = f[2]
		k, name, _ := strings.Cut(f[3], ":")
		sk, ok := parseSubjectKind(k)
		if !ok {
			return c, "", fmt.Errorf("unknown subject kind %q", k)
		}
		p, s, e, err := parseSpan(f[4])
		if err != nil {
			return c, "", err
		}
		c.Proposal.Kind = capImplementationLocation
		c.Claims = []claimAt{{Claim: Claim{Kind: claimDeclared, Subject: Subject{Kind: sk, Name: name}, Path: p}, ID: "claim-" + id, StartLine: s, EndLine: e}}
		return c, role, checkState(c.State)
	default:
		return c, "", fmt.Errorf("unknown role %q", role)
	}
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			p, s, e, err := parseSpan(kv)
			if err != nil {
				return c, "", err
			}
			c.Proposal.Path, c.Proposal.StartLine, c.Proposal.EndLine = p, s, e
			continue
		}
		list := strings.Split(v, ",")
		sat := &c.Certificate.Satisfies
		switch k {
		case "seq":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return c, "", err
			}
			c.Seq = n
		case "polarity":
			sat.Polarity = list
		case "selection":
			sat.Selection = list
		case "completeness":
			sat.Completeness = list
		case "granularity":
			sat.Granularity = list
		case "scenario":
			sat.Scenario, c.Proposal.Scenario = v, v
		case "steps":
			for _, st := range strings.Split(v, ">") {
				p, s, e, err := parseSpan(st)
				if err != nil {
					return c, "", err
				}
				c.Proposal.Steps = append(c.Proposal.Steps, flowStep{Path: p, StartLine: s, EndLine: e})
			}
		default:
			return c, "", fmt.Errorf("unknown key %q", k)
		}
	}
	return c, role, checkState(c.State)
}

func checkState(s string) error {
	switch s {
	case stateFresh, stateReplayed, stateStale:
		return nil
	}
	return fmt.Errorf("unknown state %q", s)
}

// parseSpan reads PATH:START-END.
func parseSpan(s string) (string, int, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, 0, fmt.Errorf("want PATH:START-END, got %q", s)
	}
	a, b, _ := strings.Cut(s[i+1:], "-")
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return "", 0, 0, fmt.Errorf("want PATH:START-END, got %q", s)
	}
	return s[:i], start, end, nil
}

// showDecision renders a decision for the transcripts.
func showDecision(d decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", d.Kind)
	for _, c := range d.Chosen {
		from := c.Evidence.ArtifactID
		if c.Claim != nil {
			from += " (claim " + c.Claim.ID + ")"
		}
		fmt.Fprintf(&b, "chosen %s %s: %s\n", c.Obligation.Strength, c.Obligation.Kind, from)
	}
	if len(d.Missing) > 0 {
		fmt.Fprintf(&b, "missing: %s\n", kindList(d.Missing))
	}
	if len(d.WorkerFor) > 0 {
		fmt.Fprintf(&b, "worker for: %s\n", kindList(d.WorkerFor))
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", d.Reason)
	}
	return b.String()
}
