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

// compilerVersion changes whenever the compiler could give a request a
// different needIR. It is part of the semantic-definition digest.
const compilerVersion = "needle-compiler/1"

// needIR is the canonical meaning of a need: what Compile makes of a request.
// Two requests with the same needIR are the same need and share a need_id.
// The task wording is not part of it.
type needIR struct {
	Route       route        `json:"route"`
	Subject     Subject      `json:"subject"`
	Obligations []obligation `json:"obligations"`
	World       world        `json:"world"`
}

// Subject is what a need is about.
type Subject struct {
	Kind subjectKind `json:"kind"`
	Name string      `json:"name"`
}

// obligation is one capability a need asks for, with the facets that qualify
// it. A facet left empty is unconstrained: the compiler never invents one
// that neither the caller nor the route minimum named.
type obligation struct {
	Kind     CapabilityKind `json:"kind"`
	Strength strength       `json:"strength"`
	Facets   facets         `json:"facets"`
}

// facets qualify an obligation; each is empty when unconstrained.
type facets struct {
	Polarity     string `json:"polarity,omitempty"`
	Selection    string `json:"selection,omitempty"`
	Scenario     string `json:"scenario,omitempty"`
	Completeness string `json:"completeness,omitempty"`
	Granularity  string `json:"granularity,omitempty"`
}

// get returns the value of facet f.
func (f *facets) get(name facetName) string { return *f.field(name) }

// set sets facet f.
func (f *facets) set(name facetName, value string) { *f.field(name) = value }

func (f *facets) field(name facetName) *string {
	switch name {
	case facetPolarity:
		return &f.Polarity
	case facetSelection:
		return &f.Selection
	case facetScenario:
		return &f.Scenario
	case facetCompleteness:
		return &f.Completeness
	case facetGranularity:
		return &f.Granularity
	}
	panic("product: unknown facet " + string(name))
}

// world is the source, platform and feature set a need is asked against.
// Features nil means the default feature set.
type world struct {
	Source   string   `json:"source"`
	Platform string   `json:"platform"`
	Features []string `json:"features"`
}

// World defaults.
const (
	sourceCurrent   = "current"
	platformCurrent = "current"
	featuresDefault = "default"
)

// MarshalJSON writes Features as "default" when nil, as in the request.
func (w world) MarshalJSON() ([]byte, error) {
	var features any = featuresDefault
	if w.Features != nil {
		features = w.Features
	}
	return json.Marshal(struct {
		Source   string `json:"source"`
		Platform string `json:"platform"`
		Features any    `json:"features"`
	}{w.Source, w.Platform, features})
}

// UnmarshalJSON reads what MarshalJSON writes (a stored needIR): features
// "default" or a list.
func (w *world) UnmarshalJSON(data []byte) error {
	var raw struct {
		Source   string          `json:"source"`
		Platform string          `json:"platform"`
		Features json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*w = world{Source: raw.Source, Platform: raw.Platform}
	if string(raw.Features) == `"`+featuresDefault+`"` {
		return nil
	}
	return json.Unmarshal(raw.Features, &w.Features)
}

// compiledNeed is the result of Compile.
type compiledNeed struct {
	ID           string `json:"need_id"`
	IR           needIR `json:"ir"`
	Task         string `json:"task"`
	DefinitionID string `json:"definition_id"`
}

// needIDs remembers need ids by the IR's encoding: a client asks the same
// needs again and again, and the canonical form and hash of each were a
// tenth of an exact hit (issue 13). The id is the same function of the IR.
var needIDs = contentid.NewMemo(1024)

// Compile turns an untrusted request into its canonical needIR and need_id.
// It is pure. Every violation of the contract is a KindInvalidInput *Error
// whose Path is the JSON path of the offending value.
func Compile(req NeedRequest, routes routeSet) (compiledNeed, error) {
	route, err := compileRoute(req.Route, routes)
	if err != nil {
		return compiledNeed{}, err
	}
	subject, err := compileSubject(req.Subject)
	if err != nil {
		return compiledNeed{}, err
	}
	obligations, err := compileObligations(route, req.Required, req.Preferred)
	if err != nil {
		return compiledNeed{}, err
	}
	world, err := compileWorld(req.World)
	if err != nil {
		return compiledNeed{}, err
	}
	if err := checkTask(req.Task); err != nil {
		return compiledNeed{}, err
	}
	ir := needIR{Route: route, Subject: subject, Obligations: obligations, World: world}
	id, err := needIDs.Of(tagNeed, ir)
	if err != nil {
		return compiledNeed{}, &Error{Op: opCompile, Kind: kindOther, Err: err}
	}
	return compiledNeed{ID: id, IR: ir, Task: req.Task, DefinitionID: DefinitionID()}, nil
}

const opCompile = "need.compile"

func compileRoute(name string, routes routeSet) (route, error) {
	route, ok := parseRoute(name)
	if !ok {
		return "", invalidf(opCompile, "route", "unknown route %q; want %s", name, enum.List(allRoutes))
	}
	if !routes.Enabled(route) {
		return "", invalidf(opCompile, "route", "route %q is not enabled; enabled: %s", name, enum.List(routes))
	}
	return route, nil
}

func compileSubject(s SubjectRequest) (Subject, error) {
	kind, ok := parseSubjectKind(s.Kind)
	if !ok {
		return Subject{}, invalidf(opCompile, "subject.kind", "unknown subject kind %q; want %s", s.Kind, enum.List(allSubjectKinds))
	}
	name := s.Name
	switch {
	case !utf8.ValidString(name):
		return Subject{}, invalidf(opCompile, "subject.name", "subject name is not valid UTF-8")
	case utf8.RuneCountInString(name) > maxSubjectNameChars: // as sent, like the schema's maxLength
		return Subject{}, invalidf(opCompile, "subject.name", "subject name is %d characters; the limit is %d characters (Unicode code points)",
			utf8.RuneCountInString(name), maxSubjectNameChars)
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
func compileObligations(route route, required, preferred []ObligationRequest) ([]obligation, error) {
	if len(required)+len(preferred) > maxObligations {
		path := "required"
		if len(preferred) > len(required) {
			path = "preferred"
		}
		return nil, invalidf(opCompile, path, "too many obligations (%d in all); the limit is %d", len(required)+len(preferred), maxObligations)
	}
	var out []obligation
	seen := map[CapabilityKind]string{}
	for _, list := range []struct {
		key      string
		strength strength
		obls     []ObligationRequest
	}{{"required", StrengthRequired, required}, {"preferred", strengthPreferred, preferred}} {
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
	slices.SortFunc(out, func(a, b obligation) int {
		return slices.Index(allCapabilities, a.Kind) - slices.Index(allCapabilities, b.Kind)
	})
	return out, nil
}

func compileObligation(path string, strength strength, o ObligationRequest) (obligation, error) {
	kind, ok := parseCapabilityKind(o.Kind)
	if !ok {
		return obligation{}, invalidf(opCompile, path+".kind", "unknown capability kind %q; want %s", o.Kind, enum.List(allCapabilities))
	}
	ob := obligation{Kind: kind, Strength: strength}
	for _, f := range o.Facets {
		fpath := path + "." + f.Name
		name, ok := parseFacetName(f.Name)
		if !ok {
			return obligation{}, invalidf(opCompile, fpath, "unknown field %q", f.Name)
		}
		if !takesFacet(kind, name) {
			return obligation{}, invalidf(opCompile, fpath, "%s does not take facet %s; it takes %s", kind, name, enum.List(capabilityFacets[kind]))
		}
		if ob.Facets.get(name) != "" {
			return obligation{}, invalidf(opCompile, fpath, "duplicate facet %s", name)
		}
		if err := checkFacetValue(fpath, name, f.Value); err != nil {
			return obligation{}, err
		}
		ob.Facets.set(name, f.Value)
	}
	return ob, nil
}

func checkFacetValue(path string, name facetName, value string) error {
	if name == facetScenario {
		if value == scenarioDefault {
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
func mergeMinimums(route route, obls []obligation, paths map[CapabilityKind]string) ([]obligation, error) {
	for _, min := range routeMinimums[route] {
		i := slices.IndexFunc(obls, func(o obligation) bool { return o.Kind == min.Kind })
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

func compileWorld(w worldRequest) (world, error) {
	out := world{Source: sourceCurrent, Platform: platformCurrent}
	if w.Source != "" && w.Source != sourceCurrent {
		if !contentid.Valid(w.Source) {
			return world{}, invalidf(opCompile, "world.source", "malformed snapshot digest %q; want \"current\" or b3: and 64 lowercase hex digits", w.Source)
		}
		out.Source = w.Source
	}
	if w.Platform != "" && w.Platform != platformCurrent {
		if err := checkBoundedName("world.platform", "platform", w.Platform); err != nil {
			return world{}, err
		}
		out.Platform = w.Platform
	}
	if w.Features == nil {
		return out, nil
	}
	switch {
	case len(w.Features) == 0:
		return world{}, invalidf(opCompile, "world.features", "empty feature list; write \"default\" for the default features")
	case len(w.Features) > maxFeatures:
		return world{}, invalidf(opCompile, "world.features", "%d features; the limit is %d", len(w.Features), maxFeatures)
	}
	for i, f := range w.Features {
		path := fmt.Sprintf("world.features[%d]", i)
		if err := checkBoundedName(path, "feature", f); err != nil {
			return world{}, err
		}
		if f == featuresDefault {
			return world{}, invalidf(opCompile, path, "%q is not a feature name; write \"features\": \"default\" for the default features", f)
		}
		if i > 0 && f <= w.Features[i-1] {
			return world{}, invalidf(opCompile, path, "features must be sorted and unique: %q after %q", f, w.Features[i-1])
		}
	}
	out.Features = slices.Clone(w.Features)
	return out, nil
}

// checkBoundedName checks a scenario, platform or feature name: 1 to
// maxNameBytes of lowercase letters, digits and . _ - + /, starting with a
// letter or digit.
func checkBoundedName(path, what, s string) error {
	if s == "" || len(s) > maxNameBytes {
		return invalidf(opCompile, path, "%s name must be 1 to %d bytes, got %d", what, maxNameBytes, len(s))
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
	if n := utf8.RuneCountInString(task); n > maxTaskChars {
		return invalidf(opCompile, "task", "task is %d characters; the limit is %d characters (Unicode code points)", n, maxTaskChars)
	}
	if err := safetext.CheckText(task, true); err != nil {
		return invalidf(opCompile, "task", "task %v", err)
	}
	return nil
}
