package product

import (
	"encoding/json"
	"strings"
	"sync"
)

// The digests of what a session's transport speaks: the @@need marker
// grammar, and the transport's whole contract. A session records them
// when it starts (with the prompt profile, prompt_profile.go), beside its
// semantic definition, routes and main model; a session an earlier process
// started and this one resumes is told apart when any of them changed
// (Engine.ResumeSession, SessionChanges).

// markerGrammarRevision is the revision of the @@need marker grammar:
// which lines are markers (markerLines) and how one reads (ParseMarker).
// TestMarkerGrammar_Revisions holds each revision to one digest: a change
// of how any sample reads must bump it.
const markerGrammarRevision = 1

// markerSamples are messages whose readings the grammar digest covers:
// every construct of the grammar, the lines that are not markers, and
// errors.
var markerSamples = []string{
	"@@need locate.implementation symbol:Greet",
	"@@need trace.state-flow cli_option:--crlf +implementation_location(polarity=positive,selection=primary) " +
		"+runtime_flow(scenario=default,completeness=contract_complete,granularity=stepwise) " +
		"?focused_tests(polarity=positive,selection=representative,completeness=open_world) source=current " +
		`platform=current features=default task="Trace how --crlf changes \"matching\"\tand\nlines."`,
	"@@need tests.relevant configuration_key:\"a key\" features=b,a\t",
	"prose\n   @@need locate.implementation symbol:T.M\nmore prose",
	"```\n@@need locate.implementation symbol:Fenced\n```\n> @@need locate.implementation symbol:Quoted\n" +
		"- @@need locate.implementation symbol:Item\n    @@need locate.implementation symbol:Indented\n# @@need heading",
	"@@need locate.implementation symbol:A\n\n@@need locate.implementation symbol:B",
	"@@need", "@@need locate.implementation", "@@need locate.implementation symbol:X +runtime_flow(",
	"@@need locate.implementation symbol:X task=\"unterminated", "@@needle locate.implementation symbol:X",
}

// markerGrammar is the grammar's revision and digest: the content id of
// the revision and the readings of the samples.
var markerGrammar = sync.OnceValue(func() string {
	type reading struct {
		Line    string       `json:"line"`
		Request *NeedRequest `json:"request,omitempty"`
		Error   string       `json:"error,omitempty"`
	}
	var readings [][]reading
	for _, m := range markerSamples {
		var rs []reading
		for _, line := range markerLines(m) {
			r := reading{Line: line}
			if req, err := ParseMarker(line); err != nil {
				r.Error = err.Error()
			} else {
				r.Request = &req
			}
			rs = append(rs, r)
		}
		readings = append(readings, rs)
	}
	return mustID(tagGrammar, struct {
		Revision int         `json:"revision"`
		Readings [][]reading `json:"readings"`
	}{markerGrammarRevision, readings})
})

// markerTransport reports whether a transport reads needs as markers.
func markerTransport(transport string) bool { return strings.HasPrefix(transport, "codex-") }

// toolTable is mcpTools, set by init: the table's handlers start sessions,
// whose digests read the table (an initialization cycle otherwise).
var toolTable func() []mcpTool

func init() { toolTable = func() []mcpTool { return mcpTools } }

// transportDigests memoizes transportDigest by its arguments.
var transportDigests sync.Map // string → string

// transportDigest is the content id of what a session's transport speaks:
// its name and negotiated protocol, the marker grammar for a marker
// transport, and otherwise the need request's schema for the session's
// routes — for MCP, every tool's input and output schema.
func transportDigest(transport, protocol string, routes routeSet) string {
	key := transport + "\x00" + protocol + "\x00" + mustJSON(routes)
	if d, ok := transportDigests.Load(key); ok {
		return d.(string)
	}
	type tool struct {
		Name   string `json:"name"`
		Input  any    `json:"input"`
		Output any    `json:"output"`
	}
	contract := struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
		Grammar  string `json:"grammar,omitempty"`
		Request  any    `json:"request,omitempty"`
		Tools    []tool `json:"tools,omitempty"`
		Reply    int    `json:"reply_bytes,omitempty"`
	}{Name: transport, Protocol: protocol}
	switch {
	case markerTransport(transport):
		contract.Grammar, contract.Reply = markerGrammar(), maxReplyBytes
	case transport == "mcp":
		e := &Engine{cfg: Config{Routes: routes}}
		for _, t := range toolTable() {
			contract.Tools = append(contract.Tools, tool{t.name, json.RawMessage(mustJSON(t.input(e))), json.RawMessage(mustJSON(t.output()))})
		}
	default:
		contract.Request = json.RawMessage(mustJSON(needContextInputSchema(routes)))
	}
	d := mustID(tagTransport, contract)
	transportDigests.Store(key, d)
	return d
}

// sessionDigests are what a session's transport speaks and what its
// workers are sent, as a session records them.
type sessionDigests struct {
	Transport      string // transportDigest
	Grammar        string // markerGrammar, for a marker transport
	PromptRevision int    // currentPromptProfile
	PromptDigest   string
}

// currentSessionDigests are this Needle's digests for a session of
// transport speaking protocol with routes.
func currentSessionDigests(transport, protocol string, routes routeSet) sessionDigests {
	p := currentPromptProfile()
	d := sessionDigests{Transport: transportDigest(transport, protocol, routes), PromptRevision: p.Revision, PromptDigest: p.Digest}
	if markerTransport(transport) {
		d.Grammar = markerGrammar()
	}
	return d
}

// routeSetOf is the routeSet of route names as a session row stores them.
func routeSetOf(names []string) routeSet {
	rs := routeSet{}
	for _, n := range names {
		rs = append(rs, route(n))
	}
	return rs
}
