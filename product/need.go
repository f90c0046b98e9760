package product

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/enum"
)

// route names a kind of need the main model may ask for. The set of routes a
// session may use is frozen when the session starts (routeSet).
type route string

const (
	routeLocateImplementation route = "locate.implementation"
	routeTraceStateFlow       route = "trace.state-flow"
	routeTestsRelevant        route = "tests.relevant"
)

// allRoutes lists every route in canonical order.
var allRoutes = []route{routeLocateImplementation, routeTraceStateFlow, routeTestsRelevant}

func (r route) String() string { return string(r) }

// parseRoute returns the route named s.
func parseRoute(s string) (route, bool) { return enum.Parse(allRoutes, s) }

// routeSet is the set of routes enabled for a session or a command.
type routeSet []route

// AllRoutes returns a routeSet with every route enabled.
func AllRoutes() routeSet { return append(routeSet(nil), allRoutes...) }

// parseRouteSet parses a comma-separated list of route names.
func parseRouteSet(s string) (routeSet, error) {
	var set routeSet
	for _, name := range strings.Split(s, ",") {
		r, ok := parseRoute(strings.TrimSpace(name))
		if !ok {
			return nil, invalidf("routes", "", "unknown route %q; want one of %s", name, enum.List(allRoutes))
		}
		if !set.Enabled(r) {
			set = append(set, r)
		}
	}
	return set, nil
}

// Enabled reports whether r is in the set.
func (s routeSet) Enabled(r route) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}

// subjectKind is what a need is about.
type subjectKind string

const (
	subjectSymbol           subjectKind = "symbol"
	subjectCLIOption        subjectKind = "cli_option"
	subjectConfigurationKey subjectKind = "configuration_key"
	subjectTest             subjectKind = "test"
	subjectFile             subjectKind = "file"
	subjectModule           subjectKind = "module"
	subjectBehavior         subjectKind = "behavior"
)

var allSubjectKinds = []subjectKind{subjectSymbol, subjectCLIOption, subjectConfigurationKey,
	subjectTest, subjectFile, subjectModule, subjectBehavior}

func (k subjectKind) String() string { return string(k) }

// parseSubjectKind returns the subject kind named s.
func parseSubjectKind(s string) (subjectKind, bool) { return enum.Parse(allSubjectKinds, s) }

// CapabilityKind is a kind of evidence an obligation asks for.
type CapabilityKind string

const (
	capImplementationLocation CapabilityKind = "implementation_location"
	capRuntimeFlow            CapabilityKind = "runtime_flow"
	capFocusedTests           CapabilityKind = "focused_tests"
)

// allCapabilities lists every capability kind in canonical order; compiled
// obligations are sorted in this order.
var allCapabilities = []CapabilityKind{capImplementationLocation, capRuntimeFlow, capFocusedTests}

func (k CapabilityKind) String() string { return string(k) }

// parseCapabilityKind returns the capability kind named s.
func parseCapabilityKind(s string) (CapabilityKind, bool) { return enum.Parse(allCapabilities, s) }

// facetName names a facet, a qualifier of an obligation.
type facetName string

const (
	facetPolarity     facetName = "polarity"
	facetSelection    facetName = "selection"
	facetScenario     facetName = "scenario"
	facetCompleteness facetName = "completeness"
	facetGranularity  facetName = "granularity"
)

// allFacets lists every facet in canonical order.
var allFacets = []facetName{facetPolarity, facetSelection, facetScenario, facetCompleteness, facetGranularity}

// parseFacetName returns the facet named s.
func parseFacetName(s string) (facetName, bool) { return enum.Parse(allFacets, s) }

// capabilityFacets says which facets each capability kind takes.
var capabilityFacets = map[CapabilityKind][]facetName{
	capImplementationLocation: {facetPolarity, facetSelection},
	capRuntimeFlow:            {facetScenario, facetCompleteness, facetGranularity},
	capFocusedTests:           {facetPolarity, facetSelection, facetCompleteness},
}

// facetValues lists the values of each enumerated facet, weakest first where
// the facet is ordered (see facetOrdered). Scenario is not enumerated: it is
// scenarioDefault or a bounded name.
var facetValues = map[facetName][]string{
	facetPolarity:     {"positive", "negative"},
	facetSelection:    {"primary", "representative", "exhaustive"},
	facetCompleteness: {"open_world", "contract_complete"},
	facetGranularity:  {"summary", "stepwise"},
}

// facetOrdered says which facets are ordered by strength. When a route
// minimum and the caller both set an ordered facet, the stronger value wins;
// an unordered facet (polarity, scenario) set by both must agree.
var facetOrdered = map[facetName]bool{
	facetSelection:    true,
	facetCompleteness: true,
	facetGranularity:  true,
}

// scenarioDefault is the runtime_flow scenario every program has.
const scenarioDefault = "default"

// takesFacet reports whether capability k takes facet f.
func takesFacet(k CapabilityKind, f facetName) bool {
	for _, x := range capabilityFacets[k] {
		if x == f {
			return true
		}
	}
	return false
}

// strength says whether an obligation must be satisfied (required) or is
// welcome when cheap (preferred).
type strength string

const (
	StrengthRequired  strength = "required"
	strengthPreferred strength = "preferred"
)

// routeMinimums are the obligations each route always carries, merged into
// the caller's by the compiler (see "Compilation and identity" in doc.go).
// Only the facets named here
// are ever added to what the caller wrote.
var routeMinimums = map[route][]obligation{
	routeLocateImplementation: {
		{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Selection: "primary"}},
	},
	routeTraceStateFlow: {
		{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Selection: "primary"}},
		{Kind: capRuntimeFlow, Strength: StrengthRequired, Facets: facets{Scenario: scenarioDefault}},
	},
	routeTestsRelevant: {
		{Kind: capFocusedTests, Strength: StrengthRequired, Facets: facets{Selection: "representative"}},
	},
}

// NeedRequest is the untrusted typed request: the need_context input of the
// MCP tool, or what a @@need marker says. Strings are as written; Compile
// validates them. DecodeNeedRequest and ParseMarker produce it.
type NeedRequest struct {
	Route     string
	Subject   SubjectRequest
	Required  []ObligationRequest
	Preferred []ObligationRequest
	World     worldRequest
	Task      string
}

// SubjectRequest is the subject as written.
type SubjectRequest struct {
	Kind string
	Name string
}

// ObligationRequest is one required[] or preferred[] entry as written:
// a capability kind and the facets the caller set, in the order written.
type ObligationRequest struct {
	Kind   string
	Facets []facetRequest
}

// facetRequest is one facet as written.
type facetRequest struct {
	Name  string
	Value string
}

// worldRequest is the world as written; an empty field means its default.
// Features nil means "default"; a non-nil slice is an explicit list.
type worldRequest struct {
	Source   string
	Platform string
	Features []string
}

// MarshalJSON encodes the request in the need_context JSON shape, with the
// facets of each obligation in the order written. It is the inverse of
// DecodeNeedRequest for every request that decodes.
func (r NeedRequest) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"route":`)
	writeJSONString(&b, r.Route)
	b.WriteString(`,"subject":{"kind":`)
	writeJSONString(&b, r.Subject.Kind)
	b.WriteString(`,"name":`)
	writeJSONString(&b, r.Subject.Name)
	b.WriteString(`}`)
	for _, list := range []struct {
		key  string
		obls []ObligationRequest
	}{{"required", r.Required}, {"preferred", r.Preferred}} {
		if list.obls == nil {
			continue
		}
		b.WriteString(`,"` + list.key + `":[`)
		for i, o := range list.obls {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"kind":`)
			writeJSONString(&b, o.Kind)
			for _, f := range o.Facets {
				b.WriteByte(',')
				writeJSONString(&b, f.Name)
				b.WriteByte(':')
				writeJSONString(&b, f.Value)
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	var world []string
	if r.World.Source != "" {
		world = append(world, `"source":`+quoteJSON(r.World.Source))
	}
	if r.World.Platform != "" {
		world = append(world, `"platform":`+quoteJSON(r.World.Platform))
	}
	if r.World.Features != nil {
		list, _ := json.Marshal(r.World.Features)
		world = append(world, `"features":`+string(list))
	}
	if world != nil {
		b.WriteString(`,"world":{` + strings.Join(world, ",") + `}`)
	}
	if r.Task != "" {
		b.WriteString(`,"task":`)
		writeJSONString(&b, r.Task)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func quoteJSON(s string) string {
	var b bytes.Buffer
	writeJSONString(&b, s)
	return b.String()
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
