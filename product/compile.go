package product

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/enum"
	"github.com/needle-dev/needle/product/internal/safetext"
)

// CompilerVersion changes whenever the compiler could give a request a
// different NeedIR. It is part of the semantic-definition digest.
const CompilerVersion = "needle-compiler/1"

// NeedIR is the canonical meaning of a need: what Compile makes of a request.
// Two requests with the same NeedIR are the same need and share a need_id.
// The task wording is not part of it.
type NeedIR struct {
	Route       Route        `json:"route"`
	Subject     Subject      `json:"subject"`
	Obligations []Obligation `json:"obligations"`
	World       World        `json:"world"`
}

// Subject is what a need is about.
type Subject struct {
	Kind SubjectKind `json:"kind"`
	Name string      `json:"name"`
}

// Obligation is one capability a need asks for, with the facets that qualify
// it. A facet left empty is unconstrained: the compiler never invents one
// that neither the caller nor the route minimum named.
type Obligation struct {
	Kind     CapabilityKind `json:"kind"`
	Strength Strength       `json:"strength"`
	Facets   Facets         `json:"facets"`
}

// Facets qualify an obligation; each is empty when unconstrained.
type Facets struct {
	Polarity     string `json:"polarity,omitempty"`
	Selection    string `json:"selection,omitempty"`
	Scenario     string `json:"scenario,omitempty"`
	Completeness string `json:"completeness,omitempty"`
	Granularity  string `json:"granularity,omitempty"`
}

// get returns the value of facet f.
func (f *Facets) get(name FacetName) string { return *f.field(name) }

// set sets facet f.
func (f *Facets) set(name FacetName, value string) { *f.field(name) = value }

func (f *Facets) field(name FacetName) *string {
	switch name {
	case FacetPolarity:
		return &f.Polarity
	case FacetSelection:
		return &f.Selection
	case FacetScenario:
		return &f.Scenario
	case FacetCompleteness:
		return &f.Completeness
	case FacetGranularity:
		return &f.Granularity
	}
	panic("product: unknown facet " + string(name))
}

// World is the source, platform and feature set a need is asked against.
// Features nil means the default feature set.
type World struct {
	Source   string   `json:"source"`
	Platform string   `json:"platform"`
	Features []string `json:"features"`
}

// World defaults.
const (
	SourceCurrent   = "current"
	PlatformCurrent = "current"
	FeaturesDefault = "default"
)

// MarshalJSON writes Features as "default" when nil, as in the request.
func (w World) MarshalJSON() ([]byte, error) {
	var features any = FeaturesDefault
	if w.Features != nil {
		features = w.Features
	}
	return json.Marshal(struct {
		Source   string `json:"source"`
		Platform string `json:"platform"`
		Features any    `json:"features"`
	}{w.Source, w.Platform, features})
}

// UnmarshalJSON reads what MarshalJSON writes (a stored NeedIR): features
// "default" or a list.
func (w *World) UnmarshalJSON(data []byte) error {
	var raw struct {
		Source   string          `json:"source"`
		Platform string          `json:"platform"`
		Features json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*w = World{Source: raw.Source, Platform: raw.Platform}
	if string(raw.Features) == `"`+FeaturesDefault+`"` {
		return nil
	}
	return json.Unmarshal(raw.Features, &w.Features)
}

// CompiledNeed is the result of Compile.
type CompiledNeed struct {
	ID           string `json:"need_id"`
	IR           NeedIR `json:"ir"`
	Task         string `json:"task"`
	DefinitionID string `json:"definition_id"`
}

// needIDs remembers need ids by the IR's encoding: a client asks the same
// needs again and again, and the canonical form and hash of each were a
// tenth of an exact hit (issue 13). The id is the same function of the IR.
var needIDs = contentid.NewMemo(1024)

// Compile turns an untrusted request into its canonical NeedIR and need_id.
// It is pure. Every violation of the contract is a KindInvalidInput *Error
// whose Path is the JSON path of the offending value.
func Compile(req NeedRequest, routes RouteSet) (CompiledNeed, error) {
	route, err := compileRoute(req.Route, routes)
	if err != nil {
		return CompiledNeed{}, err
	}
	subject, err := compileSubject(req.Subject)
	if err != nil {
		return CompiledNeed{}, err
	}
	obligations, err := compileObligations(route, req.Required, req.Preferred)
	if err != nil {
		return CompiledNeed{}, err
	}
	world, err := compileWorld(req.World)
	if err != nil {
		return CompiledNeed{}, err
	}
	if err := checkTask(req.Task); err != nil {
		return CompiledNeed{}, err
	}
	ir := NeedIR{Route: route, Subject: subject, Obligations: obligations, World: world}
	id, err := needIDs.Of(tagNeed, ir)
	if err != nil {
		return CompiledNeed{}, &Error{Op: opCompile, Kind: KindOther, Err: err}
	}
	return CompiledNeed{ID: id, IR: ir, Task: req.Task, DefinitionID: DefinitionID()}, nil
}

const opCompile = "need.compile"

func compileRoute(name string, routes RouteSet) (Route, error) {
	route, ok := ParseRoute(name)
	if !ok {
		return "", invalidf(opCompile, "route", "unknown route %q; want %s", name, enum.List(allRoutes))
	}
	if !routes.Enabled(route) {
		return "", invalidf(opCompile, "route", "route %q is not enabled; enabled: %s", name, enum.List(routes))
	}
	return route, nil
}

func compileSubject(s SubjectRequest) (Subject, error) {
	kind, ok := ParseSubjectKind(s.Kind)
	if !ok {
		return Subject{}, invalidf(opCompile, "subject.kind", "unknown subject kind %q; want %s", s.Kind, enum.List(allSubjectKinds))
	}
	name := s.Name
	switch {
	case !utf8.ValidString(name):
		return Subject{}, invalidf(opCompile, "subject.name", "subject name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxSubjectNameChars: // as sent, like the schema's maxLength
		return Subject{}, invalidf(opCompile, "subject.name", "subject name is %d characters; the limit is %d characters (Unicode code points)",
			utf8.RuneCountInString(name), MaxSubjectNameChars)
	}
	name = norm.NFC.String(name)
	switch {
	case strings.TrimSpace(name) == "":
		return Subject{}, invalidf(opCompile, "subject.name", "empty subject name")
	case strings.TrimSpace(name) != name:
		return Subject{}, invalidf(opCompile, "subject.name", "subject name has leading or trailing white space")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return Subject{}, invalidf(opCompile, "subject.name", "subject name contains a control character")
	}
	return Subject{Kind: kind, Name: name}, nil
}

// compileObligations validates both lists, merges the route minimums and
// returns the obligations sorted by capability kind.
func compileObligations(route Route, required, preferred []ObligationRequest) ([]Obligation, error) {
	if len(required)+len(preferred) > MaxObligations {
		path := "required"
		if len(preferred) > len(required) {
			path = "preferred"
		}
		return nil, invalidf(opCompile, path, "too many obligations (%d in all); the limit is %d", len(required)+len(preferred), MaxObligations)
	}
	var out []Obligation
	seen := map[CapabilityKind]string{}
	for _, list := range []struct {
		key      string
		strength Strength
		obls     []ObligationRequest
	}{{"required", StrengthRequired, required}, {"preferred", StrengthPreferred, preferred}} {
		for i, o := range list.obls {
			path := fmt.Sprintf("%s[%d]", list.key, i)
			ob, err := compileObligation(path, list.strength, o)
			if err != nil {
				return nil, err
			}
			if first, dup := seen[ob.Kind]; dup {
				what := "duplicate capability kind"
				if !strings.HasPrefix(first, list.key) {
					what = "capability kind both required and preferred"
				}
				return nil, invalidf(opCompile, path+".kind", "%s %q (first at %s)", what, ob.Kind, first)
			}
			seen[ob.Kind] = path
			out = append(out, ob)
		}
	}
	out, err := mergeMinimums(route, out, seen)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Obligation) int {
		return slices.Index(allCapabilities, a.Kind) - slices.Index(allCapabilities, b.Kind)
	})
	return out, nil
}

func compileObligation(path string, strength Strength, o ObligationRequest) (Obligation, error) {
	kind, ok := ParseCapabilityKind(o.Kind)
	if !ok {
		return Obligation{}, invalidf(opCompile, path+".kind", "unknown capability kind %q; want %s", o.Kind, enum.List(allCapabilities))
	}
	ob := Obligation{Kind: kind, Strength: strength}
	for _, f := range o.Facets {
		fpath := path + "." + f.Name
		name, ok := ParseFacetName(f.Name)
		if !ok {
			return Obligation{}, invalidf(opCompile, fpath, "unknown field %q", f.Name)
		}
		if !takesFacet(kind, name) {
			return Obligation{}, invalidf(opCompile, fpath, "%s does not take facet %s; it takes %s", kind, name, enum.List(capabilityFacets[kind]))
		}
		if ob.Facets.get(name) != "" {
			return Obligation{}, invalidf(opCompile, fpath, "duplicate facet %s", name)
		}
		if err := checkFacetValue(fpath, name, f.Value); err != nil {
			return Obligation{}, err
		}
		ob.Facets.set(name, f.Value)
	}
	return ob, nil
}

func checkFacetValue(path string, name FacetName, value string) error {
	if name == FacetScenario {
		if value == ScenarioDefault {
			return nil
		}
		return checkBoundedName(path, "scenario", value)
	}
	if !slices.Contains(facetValues[name], value) {
		return invalidf(opCompile, path, "unknown %s %q; want %s", name, value, enum.List(facetValues[name]))
	}
	return nil
}

// mergeMinimums adds the route's minimum obligations: a missing kind is added
// as required, a preferred one is promoted, and each facet the minimum names
// is filled in when omitted, raised to the minimum when ordered and weaker,
// and must agree when unordered.
func mergeMinimums(route Route, obls []Obligation, paths map[CapabilityKind]string) ([]Obligation, error) {
	for _, min := range routeMinimums[route] {
		i := slices.IndexFunc(obls, func(o Obligation) bool { return o.Kind == min.Kind })
		if i < 0 {
			obls = append(obls, min)
			continue
		}
		obls[i].Strength = StrengthRequired
		for _, name := range allFacets {
			want := min.Facets.get(name)
			have := obls[i].Facets.get(name)
			switch {
			case want == "" || have == want:
			case have == "":
				obls[i].Facets.set(name, want)
			case facetOrdered[name]:
				if slices.Index(facetValues[name], have) < slices.Index(facetValues[name], want) {
					obls[i].Facets.set(name, want)
				}
			default:
				return nil, invalidf(opCompile, paths[min.Kind]+"."+string(name),
					"route %s requires %s %s=%s, not %s", route, min.Kind, name, want, have)
			}
		}
	}
	return obls, nil
}

func compileWorld(w WorldRequest) (World, error) {
	out := World{Source: SourceCurrent, Platform: PlatformCurrent}
	if w.Source != "" && w.Source != SourceCurrent {
		if !contentid.Valid(w.Source) {
			return World{}, invalidf(opCompile, "world.source", "malformed snapshot digest %q; want \"current\" or b3: and 64 lowercase hex digits", w.Source)
		}
		out.Source = w.Source
	}
	if w.Platform != "" && w.Platform != PlatformCurrent {
		if err := checkBoundedName("world.platform", "platform", w.Platform); err != nil {
			return World{}, err
		}
		out.Platform = w.Platform
	}
	if w.Features == nil {
		return out, nil
	}
	switch {
	case len(w.Features) == 0:
		return World{}, invalidf(opCompile, "world.features", "empty feature list; write \"default\" for the default features")
	case len(w.Features) > MaxFeatures:
		return World{}, invalidf(opCompile, "world.features", "%d features; the limit is %d", len(w.Features), MaxFeatures)
	}
	for i, f := range w.Features {
		path := fmt.Sprintf("world.features[%d]", i)
		if err := checkBoundedName(path, "feature", f); err != nil {
			return World{}, err
		}
		if f == FeaturesDefault {
			return World{}, invalidf(opCompile, path, "%q is not a feature name; write \"features\": \"default\" for the default features", f)
		}
		if i > 0 && f <= w.Features[i-1] {
			return World{}, invalidf(opCompile, path, "features must be sorted and unique: %q after %q", f, w.Features[i-1])
		}
	}
	out.Features = slices.Clone(w.Features)
	return out, nil
}

// checkBoundedName checks a scenario, platform or feature name: 1 to
// MaxNameBytes of lowercase letters, digits and . _ - + /, starting with a
// letter or digit.
func checkBoundedName(path, what, s string) error {
	if s == "" || len(s) > MaxNameBytes {
		return invalidf(opCompile, path, "%s name must be 1 to %d bytes, got %d", what, MaxNameBytes, len(s))
	}
	for i, r := range s {
		ok := 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || i > 0 && strings.ContainsRune("._-+/", r)
		if !ok {
			return invalidf(opCompile, path, "%s name %q: character %q at byte %d is not allowed (want [a-z0-9][a-z0-9._+/-]*)", what, s, r, i)
		}
	}
	return nil
}

func checkTask(task string) error {
	if !utf8.ValidString(task) {
		return invalidf(opCompile, "task", "task is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(task); n > MaxTaskChars {
		return invalidf(opCompile, "task", "task is %d characters; the limit is %d characters (Unicode code points)", n, MaxTaskChars)
	}
	if err := safetext.CheckText(task, true); err != nil {
		return invalidf(opCompile, "task", "task %v", err)
	}
	return nil
}
