package product

import (
	"strings"
	"testing"
)

func TestDefinitionID(t *testing.T) {
	id := DefinitionID()
	if !strings.HasPrefix(id, "b3:") || len(id) != 67 {
		t.Fatalf("definition id %q", id)
	}
	if id != DefinitionID() {
		t.Fatal("definition id is not stable")
	}
	saved := routeMinimums[routeTestsRelevant][0].Facets.Selection
	t.Cleanup(func() { routeMinimums[routeTestsRelevant][0].Facets.Selection = saved })
	routeMinimums[routeTestsRelevant][0].Facets.Selection = "exhaustive"
	changed := MustCanonicalID(t, tagDefinition, definition())
	if changed == id {
		t.Error("changing a route minimum did not change the definition id")
	}
}
