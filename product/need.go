package product

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/enum"
)

// Route names a kind of need the main model may ask for. The set of routes a
// session may use is frozen when the session starts (RouteSet).
type Route string

const (
	RouteLocateImplementation Route = "locate.implementation"
	RouteTraceStateFlow       Route = "trace.state-flow"
	RouteTestsRelevant        Route = "tests.relevant"
)

// allRoutes lists every route in canonical order.
var allRoutes = []Route{RouteLocateImplementation, RouteTraceStateFlow, RouteTestsRelevant}

func (r Route) String() string { return string(r) }

// ParseRoute returns the route named s.
func ParseRoute(s string) (Route, bool) { return enum.Parse(allRoutes, s) }

// RouteSet is the set of routes enabled for a session or a command.
type RouteSet []Route

// AllRoutes returns a RouteSet with every route enabled.
func AllRoutes() RouteSet { return append(RouteSet(nil), allRoutes...) }

// ParseRouteSet parses a comma-separated list of route names.
func ParseRouteSet(s string) (RouteSet, error) {
	var set RouteSet
	for _, name := range strings.Split(s, ",") {
		r, ok := ParseRoute(strings.TrimSpace(name))
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
func (s RouteSet) Enabled(r Route) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}

// SubjectKind is what a need is about.
type SubjectKind string

const (
	SubjectSymbol           SubjectKind = "symbol"
	SubjectCLIOption        SubjectKind = "cli_option"
	SubjectConfigurationKey SubjectKind = "configuration_key"
	SubjectTest             SubjectKind = "test"
	SubjectFile             SubjectKind = "file"
	SubjectModule           SubjectKind = "module"
	SubjectBehavior         SubjectKind = "behavior"
)

var allSubjectKinds = []SubjectKind{SubjectSymbol, SubjectCLIOption, SubjectConfigurationKey,
	SubjectTest, SubjectFile, SubjectModule, SubjectBehavior}

func (k SubjectKind) String() string { return string(k) }

// ParseSubjectKind returns the subject kind named s.
func ParseSubjectKind(s string) (SubjectKind, bool) { return enum.Parse(allSubjectKinds, s) }

// CapabilityKind is a kind of evidence an obligation asks for.
type CapabilityKind string

const (
	CapImplementationLocation CapabilityKind = "implementation_location"
	CapRuntimeFlow            CapabilityKind = "runtime_flow"
	CapFocusedTests           CapabilityKind = "focused_tests"
)

// allCapabilities lists every capability kind in canonical order; compiled
// obligations are sorted in this order.
var allCapabilities = []CapabilityKind{CapImplementationLocation, CapRuntimeFlow, CapFocusedTests}

func (k CapabilityKind) String() string { return string(k) }

// ParseCapabilityKind returns the capability kind named s.
func ParseCapabilityKind(s string) (CapabilityKind, bool) { return enum.Parse(allCapabilities, s) }

// FacetName names a facet, a qualifier of an obligation.
type FacetName string

const (
	FacetPolarity     FacetName = "polarity"
	FacetSelection    FacetName = "selection"
	FacetScenario     FacetName = "scenario"
	FacetCompleteness FacetName = "completeness"
	FacetGranularity  FacetName = "granularity"
)

// allFacets lists every facet in canonical order.
var allFacets = []FacetName{FacetPolarity, FacetSelection, FacetScenario, FacetCompleteness, FacetGranularity}

// ParseFacetName returns the facet named s.
func ParseFacetName(s string) (FacetName, bool) { return enum.Parse(allFacets, s) }

// capabilityFacets says which facets each capability kind takes.
var capabilityFacets = map[CapabilityKind][]FacetName{
	CapImplementationLocation: {FacetPolarity, FacetSelection},
	CapRuntimeFlow:            {FacetScenario, FacetCompleteness, FacetGranularity},
	CapFocusedTests:           {FacetPolarity, FacetSelection, FacetCompleteness},
}

// facetValues lists the values of each enumerated facet, weakest first where
// the facet is ordered (see facetOrdered). Scenario is not enumerated: it is
// ScenarioDefault or a bounded name.
var facetValues = map[FacetName][]string{
	FacetPolarity:     {"positive", "negative"},
	FacetSelection:    {"primary", "representative", "exhaustive"},
	FacetCompleteness: {"open_world", "contract_complete"},
	FacetGranularity:  {"summary", "stepwise"},
}

// facetOrdered says which facets are ordered by strength. When a route
// minimum and the caller both set an ordered facet, the stronger value wins;
// an unordered facet (polarity, scenario) set by both must agree.
var facetOrdered = map[FacetName]bool{
	FacetSelection:    true,
	FacetCompleteness: true,
	FacetGranularity:  true,
}

// ScenarioDefault is the runtime_flow scenario every program has.
const ScenarioDefault = "default"

// takesFacet reports whether capability k takes facet f.
func takesFacet(k CapabilityKind, f FacetName) bool {
	for _, x := range capabilityFacets[k] {
		if x == f {
			return true
		}
	}
	return false
}

// Strength says whether an obligation must be satisfied (required) or is
// welcome when cheap (preferred).
type Strength string

const (
	StrengthRequired  Strength = "required"
	StrengthPreferred Strength = "preferred"
)

// routeMinimums are the obligations each route always carries, merged into
// the caller's by the compiler (see "Compilation and identity" in doc.go).
// Only the facets named here
// are ever added to what the caller wrote.
var routeMinimums = map[Route][]Obligation{
	RouteLocateImplementation: {
		{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}},
	},
	RouteTraceStateFlow: {
		{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}},
		{Kind: CapRuntimeFlow, Strength: StrengthRequired, Facets: Facets{Scenario: ScenarioDefault}},
	},
	RouteTestsRelevant: {
		{Kind: CapFocusedTests, Strength: StrengthRequired, Facets: Facets{Selection: "representative"}},
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
	World     WorldRequest
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
	Facets []FacetRequest
}

// FacetRequest is one facet as written.
type FacetRequest struct {
	Name  string
	Value string
}

// WorldRequest is the world as written; an empty field means its default.
// Features nil means "default"; a non-nil slice is an explicit list.
type WorldRequest struct {
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
