package product

import (
	"sync"
)

// semanticDefinition is everything that gives a needIR its meaning: the route
// table with its minimums, the capability and facet tables, the subject
// kinds and the compiler version. Its content id (DefinitionID) is recorded
// with every session and need, so evidence is never reused across a change of
// meaning without the store knowing.
type semanticDefinition struct {
	CompilerVersion string                         `json:"compiler_version"`
	Routes          map[route][]obligation         `json:"routes"`
	Capabilities    map[CapabilityKind][]facetName `json:"capabilities"`
	FacetValues     map[facetName][]string         `json:"facet_values"`
	OrderedFacets   []facetName                    `json:"ordered_facets"`
	SubjectKinds    []subjectKind                  `json:"subject_kinds"`
}

// definition returns the semantic definition of this binary.
func definition() semanticDefinition {
	var ordered []facetName
	for _, f := range allFacets {
		if facetOrdered[f] {
			ordered = append(ordered, f)
		}
	}
	return semanticDefinition{
		CompilerVersion: compilerVersion,
		Routes:          routeMinimums,
		Capabilities:    capabilityFacets,
		FacetValues:     facetValues,
		OrderedFacets:   ordered,
		SubjectKinds:    allSubjectKinds,
	}
}

var definitionID = sync.OnceValue(func() string { return mustID(tagDefinition, definition()) })

// DefinitionID returns the content id of Definition().
func DefinitionID() string { return definitionID() }
