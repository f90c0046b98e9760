package product

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// defaultFrontierBudget bounds a FrontierView in bytes.
const defaultFrontierBudget = 6 << 10

// minFrontierBudget is the smallest budget that still fits the header.
const minFrontierBudget = 512

// frontierView renders the bounded, deterministic context text. Every
// location is cited as path:start-end; flow steps are in order with the
// callees Needle resolved between them; tests say how Needle knows they
// reach the subject (executed, static, lexical) and carry the command
// Needle derived for them; ids name the artifacts and claims. Unsafe and
// bypass results carry a reason and nothing reusable.
//
// Only what Needle verified is presented as such. Free text a worker (or an
// operator) wrote — a flow step's summary — is shown only quoted (Go string
// syntax, so no control, bidi or line-break character survives) and labelled
// as the worker's unverified description; a proposed command is never
// shown.
func frontierView(r NeedResult, d decision, plan Plan, budget int) string {
	if budget < minFrontierBudget {
		budget = minFrontierBudget
	}
	head := []string{
		fmt.Sprintf("Needle %s: %s %s", r.Route, r.Subject.Kind, printableText(r.Subject.Name)),
		fmt.Sprintf("resolution %s (%s), need %s", r.Resolution.Kind, r.Status, r.NeedID),
	}
	if r.Resolution.Kind.unsafe() || r.Resolution.Kind == resolutionBypass || len(d.Chosen) == 0 {
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
		body = append(body, fmt.Sprintf("reuse is advisory: fewer than %d cost observations", minObservations))
	}
	return fitBudget(head, body, budget)
}

func citeChoice(c choice) []string {
	p, e := c.Evidence.Proposal, c.Evidence
	level := ""
	if e.Certificate.Level == levelLexical {
		level = " (lexical evidence)"
	}
	switch {
	case c.Claim != nil:
		return []string{fmt.Sprintf("%s: %s:%d-%d%s [claim %s from artifact %s]", c.Obligation.Kind,
			c.Claim.Claim.Path, c.Claim.StartLine, c.Claim.EndLine, level, c.Claim.ID, e.ArtifactID)}
	case p.Kind == capImplementationLocation:
		return []string{fmt.Sprintf("implementation_location: %s:%d-%d%s [artifact %s]", p.Path, p.StartLine, p.EndLine, level, e.ArtifactID)}
	case p.Kind == capRuntimeFlow:
		lines := []string{fmt.Sprintf("runtime_flow (scenario %s)%s%s [artifact %s]:", printableText(p.Scenario), level, flowReach(e.Certificate), e.ArtifactID)}
		links := e.Certificate.Links
		for i, s := range p.Steps {
			line := fmt.Sprintf("  %d. %s:%d-%d", i+1, printableText(s.Path), s.StartLine, s.EndLine)
			switch {
			case i+1 == len(p.Steps):
			case i < len(links) && len(links[i]) > 0:
				line += "; calls " + strings.Join(links[i], ", ")
			default:
				line += "; call into the next step not verified (lexical)"
			}
			if s.Summary != "" {
				line += "; worker's description (unverified): " + strconv.Quote(s.Summary)
			}
			lines = append(lines, line)
		}
		return lines
	case p.Kind == capFocusedTests:
		reach := e.Certificate.Reach
		if reach == "" {
			reach = reachLexical
		}
		lines := []string{fmt.Sprintf("focused_tests (reach: %s)%s [artifact %s]:", reach, level, e.ArtifactID)}
		for _, t := range e.Certificate.Tests {
			lines = append(lines, "  - "+citeTest(t))
		}
		return lines
	}
	return nil
}

// flowReach says how Needle knows a flow: a run it made (and the command
// that repeats it), or go/types alone, labelled static.
func flowReach(c certificateBody) string {
	f := c.Flow
	switch {
	case c.Level == levelLexical:
		return ""
	case f == nil || f.Reach != reachExecuted:
		return "; static: every call resolved by go/types, nothing run, not proven for the scenario"
	case f.Derived:
		return fmt.Sprintf("; executed by Needle in its sandbox: %s (Needle's choice of run), %s in %s", f.Scenario, f.Status, time.Duration(f.DurationMs)*time.Millisecond)
	}
	return fmt.Sprintf("; executed by Needle in its sandbox: %s, %s in %s", f.Scenario, f.Status, time.Duration(f.DurationMs)*time.Millisecond)
}

// citeTest says how Needle knows a test reaches the subject and how to run
// it: Needle's own command, never the proposer's.
func citeTest(t testProof) string {
	head := fmt.Sprintf("%s in %s: ", printableText(t.Name), printableText(t.Path))
	switch t.Reach {
	case reachExecuted:
		d := time.Duration(t.DurationMs) * time.Millisecond
		runtime := t.GoVersion
		if t.Python != "" {
			runtime = "Python " + t.Python
		}
		return head + fmt.Sprintf("executed by Needle in its sandbox, %s in %s (%s), ran %s; run: %s", t.Status, d, runtime, t.Executed, t.Command)
	case reachStatic:
		return head + fmt.Sprintf("static reach, not executed (%s); run: %s", strings.Join(t.CallPath, " -> "), t.Command)
	}
	return head + "lexical: the file names the subject, reach unproven; no trusted runner, so no command"
}

// printableText is text Needle prints that it did not write itself but checked
// against the source (a path, a test name, a subject): as is when every
// character is printable, else quoted in Go syntax so that nothing in it can
// start a line or reorder one.
func printableText(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || unsafeRune(r) {
			return strconv.Quote(s)
		}
	}
	return s
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
