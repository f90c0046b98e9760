package product

import (
	"fmt"
	"strings"
)

// DefaultFrontierBudget bounds a FrontierView in bytes.
const DefaultFrontierBudget = 6 << 10

// minFrontierBudget is the smallest budget that still fits the header.
const minFrontierBudget = 512

// frontierView renders the bounded, deterministic context text. Every
// location is cited as path:start-end; flow steps are in order; tests carry
// their run command; ids name the artifacts and claims. Unsafe and bypass
// results carry a reason and nothing reusable.
func frontierView(r NeedResult, d decision, plan Plan, budget int) string {
	if budget < minFrontierBudget {
		budget = minFrontierBudget
	}
	head := []string{
		fmt.Sprintf("Needle %s: %s %s", r.Route, r.Subject.Kind, r.Subject.Name),
		fmt.Sprintf("resolution %s (%s), need %s", r.Resolution.Kind, r.Status, r.NeedID),
	}
	if r.Resolution.Kind.unsafe() || r.Resolution.Kind == ResolutionBypass || len(d.Chosen) == 0 {
		reason := d.Reason
		if reason == "" {
			reason = "no certified evidence"
		}
		head = append(head, "no reusable context: "+reason+"; do this work natively")
		return strings.Join(head, "\n") + "\n"
	}
	if r.Resolution.CertificateID != "" { // a partial answer has no need certificate
		head = append(head, fmt.Sprintf("certificate %s, plan %s", r.Resolution.CertificateID, r.Resolution.PlanID))
	} else {
		head = append(head, "plan "+r.Resolution.PlanID)
	}
	var body []string
	for _, c := range d.Chosen {
		body = append(body, citeChoice(c)...)
	}
	if len(r.Missing) > 0 {
		body = append(body, "missing: "+strings.Join(capabilityNames(r.Missing), ", "))
	}
	if plan.Advisory {
		body = append(body, fmt.Sprintf("reuse is advisory: fewer than %d cost observations", MinObservations))
	}
	return fitBudget(head, body, budget)
}

func citeChoice(c choice) []string {
	p, e := c.Evidence.Proposal, c.Evidence
	level := ""
	if e.Certificate.Level == LevelLexical {
		level = " (lexical evidence)"
	}
	switch {
	case c.Claim != nil:
		return []string{fmt.Sprintf("%s: %s:%d-%d%s [claim %s from artifact %s]", c.Obligation.Kind,
			c.Claim.Claim.Path, c.Claim.StartLine, c.Claim.EndLine, level, c.Claim.ID, e.ArtifactID)}
	case p.Kind == CapImplementationLocation:
		return []string{fmt.Sprintf("implementation_location: %s:%d-%d%s [artifact %s]", p.Path, p.StartLine, p.EndLine, level, e.ArtifactID)}
	case p.Kind == CapRuntimeFlow:
		lines := []string{fmt.Sprintf("runtime_flow (scenario %s)%s [artifact %s]:", p.Scenario, level, e.ArtifactID)}
		for i, s := range p.Steps {
			lines = append(lines, fmt.Sprintf("  %d. %s:%d-%d %s", i+1, s.Path, s.StartLine, s.EndLine, s.Summary))
		}
		return lines
	case p.Kind == CapFocusedTests:
		lines := []string{fmt.Sprintf("focused_tests%s [artifact %s]:", level, e.ArtifactID)}
		for _, t := range p.Tests {
			lines = append(lines, fmt.Sprintf("  - %s in %s: %s", t.Name, t.Path, t.Command))
		}
		return lines
	}
	return nil
}

// fitBudget joins head and body lines, dropping whole body lines from the
// end (never part of a citation) until the text fits budget bytes.
func fitBudget(head, body []string, budget int) string {
	text := strings.Join(append(append([]string{}, head...), body...), "\n") + "\n"
	for dropped := 1; len(text) > budget && dropped <= len(body); dropped++ {
		kept := body[:len(body)-dropped]
		note := fmt.Sprintf("… %d more lines omitted (context budget %d bytes)", dropped, budget)
		text = strings.Join(append(append(append([]string{}, head...), kept...), note), "\n") + "\n"
	}
	return text
}

func capabilityNames(ks []CapabilityKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}
