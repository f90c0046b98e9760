package product

import (
	"sync"
)

// SemanticDefinition is everything that gives a NeedIR its meaning: the route
// table with its minimums, the capability and facet tables, the subject
// kinds and the compiler version. Its content id (DefinitionID) is recorded
// with every session and need, so evidence is never reused across a change of
// meaning without the store knowing.
type SemanticDefinition struct {
	CompilerVersion string                         `json:"compiler_version"`
	Routes          map[Route][]Obligation         `json:"routes"`
	Capabilities    map[CapabilityKind][]FacetName `json:"capabilities"`
	FacetValues     map[FacetName][]string         `json:"facet_values"`
	OrderedFacets   []FacetName                    `json:"ordered_facets"`
	SubjectKinds    []SubjectKind                  `json:"subject_kinds"`
}

// Definition returns the semantic definition of this binary.
func Definition() SemanticDefinition {
	var ordered []FacetName
	for _, f := range allFacets {
		if facetOrdered[f] {
			ordered = append(ordered, f)
		}
	}
	return SemanticDefinition{
		CompilerVersion: CompilerVersion,
		Routes:          routeMinimums,
		Capabilities:    capabilityFacets,
		FacetValues:     facetValues,
		OrderedFacets:   ordered,
		SubjectKinds:    allSubjectKinds,
	}
}

var definitionID = sync.OnceValue(func() string { return mustID(tagDefinition, Definition()) })

// DefinitionID returns the content id of Definition().
func DefinitionID() string { return definitionID() }
