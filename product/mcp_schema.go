package product

import (
	"slices"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/schema"
	"github.com/needle-dev/needle/product/lifecycle"
)

// needContextInputSchema is the closed inputSchema of need_context for a
// session's enabled routes. It states what JSON Schema can state of the
// compiler's contract: the shape, the enums, the bounds and
// additionalProperties false at every level. The compiler also enforces
// what a schema cannot (a capability kind at most once across both lists,
// sorted features, byte lengths), so an input valid here can still be a
// -32602; an input invalid here is always one.
func needContextInputSchema(routes routeSet) map[string]any {
	obligations := map[string]any{"type": "array", "maxItems": maxObligations, "items": map[string]any{"oneOf": obligationSchemas()}}
	name := map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9._+/-]{0,63}$"}
	return schema.Object(map[string]any{
		"route":     schema.Enum(routes...),
		"subject":   schema.Object(map[string]any{"kind": schema.Enum(allSubjectKinds...), "name": map[string]any{"type": "string", "minLength": 1, "maxLength": maxSubjectNameChars}}, "kind", "name"),
		"required":  obligations,
		"preferred": obligations,
		"world": schema.Object(map[string]any{
			"source":   map[string]any{"type": "string", "pattern": "^(" + sourceCurrent + "|" + contentid.Regexp + ")$"},
			"platform": name,
			"features": map[string]any{"oneOf": []any{
				map[string]any{"type": "string", "const": featuresDefault},
				map[string]any{"type": "array", "items": name, "minItems": 1, "maxItems": maxFeatures, "uniqueItems": true},
			}},
		}),
		"task": map[string]any{"type": "string", "maxLength": maxTaskChars},
	}, "route", "subject")
}

// obligationSchemas has one closed object schema per capability kind, with
// the facets that kind takes.
func obligationSchemas() []any {
	var out []any
	for _, k := range allCapabilities {
		props := map[string]any{"kind": map[string]any{"type": "string", "const": string(k)}}
		for _, f := range capabilityFacets[k] {
			if f == facetScenario {
				props[string(f)] = map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9._+/-]{0,63}$"}
				continue
			}
			props[string(f)] = schema.Enum(facetValues[f]...)
		}
		out = append(out, schema.Object(props, "kind"))
	}
	return out
}

// needContextOutputSchema is the outputSchema of need_context: the
// structured result (NeedResult).
func needContextOutputSchema() map[string]any {
	str := map[string]any{"type": "string"}
	id := map[string]any{"type": "string", "pattern": "^" + contentid.Regexp + "$"}
	optionalID := map[string]any{"type": "string", "pattern": "^(" + contentid.Regexp + ")?$"}
	kinds := map[string]any{"type": "array", "items": schema.Enum(allCapabilities...)}
	relations := slices.Clone(relationRank)
	slices.Sort(relations)
	all := schema.Strict
	return all(map[string]any{
		"status":  schema.Enum(allResultStatuses...),
		"route":   schema.Enum(allRoutes...),
		"subject": all(map[string]any{"kind": schema.Enum(allSubjectKinds...), "name": str}),
		"need_id": id,
		"step": all(map[string]any{"ordinal": map[string]any{"type": "integer", "minimum": 1},
			"relation": schema.Enum(relations...)}),
		"satisfied": kinds,
		"missing":   kinds,
		"resolution": all(map[string]any{
			"kind":           schema.Enum(allResolutionKinds...),
			"artifact_ids":   map[string]any{"type": "array", "items": id},
			"certificate_id": optionalID,
			"plan_id":        id,
			"undecided":      map[string]any{"type": "array", "items": str},
		}),
		"reuse_unit":     schema.Enum(allReuseUnits...),
		"claim_ids":      map[string]any{"type": "array", "items": id},
		"cache_hit":      map[string]any{"type": "boolean"},
		"worker_spawned": map[string]any{"type": "boolean"},
		"result_digest":  id,
		"context":        str,
	})
}

// The schemas of the supervised-change tools, prepare_change and
// verify_change.

// prepareChangeInputSchema is the closed inputSchema of prepare_change.
func prepareChangeInputSchema() map[string]any {
	text := func(maxLen int) map[string]any {
		return map[string]any{"type": "string", "minLength": 1, "maxLength": maxLen}
	}
	ids := map[string]any{"type": "array", "maxItems": maxChangeRefs, "items": map[string]any{"type": "string", "pattern": "^" + contentid.Regexp + "$"}}
	return schema.Object(map[string]any{
		"task":                text(maxTaskChars),
		"acceptance_criteria": map[string]any{"type": "array", "minItems": 1, "maxItems": maxCriteria, "items": text(maxCriterionChars)},
		"scopes": map[string]any{"type": "array", "minItems": 1, "maxItems": maxScopes, "items": schema.Object(map[string]any{
			"path": text(maxScopePathChars),
			"kind": schema.Enum(scopeExact, scopeSubtree),
		}, "kind", "path")},
		"artifact_ids": ids,
		"claim_ids":    ids,
		"constraints": schema.Object(map[string]any{
			"max_files": map[string]any{"type": "integer", "minimum": 1, "maximum": maxPatchFiles},
			"max_bytes": map[string]any{"type": "integer", "minimum": 1, "maximum": maxPatchBytes},
			"notes":     map[string]any{"type": "array", "maxItems": maxConstraintNotes, "items": text(maxNoteChars)},
		}),
	}, "acceptance_criteria", "scopes", "task")
}

var (
	schemaString  = map[string]any{"type": "string"}
	schemaInteger = map[string]any{"type": "integer", "minimum": 0}
	schemaStrings = map[string]any{"type": "array", "items": schemaString}
	schemaDigest  = map[string]any{"type": "string", "pattern": "^(" + contentid.Regexp + ")?$"}
)

func operationsSchema() map[string]any {
	return map[string]any{"type": "array", "items": schema.Strict(map[string]any{
		"op":         schema.Enum(allPatchOps...),
		"path":       schemaString,
		"before":     schemaDigest,
		"after":      schemaDigest,
		"executable": map[string]any{"type": "boolean"},
		"bytes":      schemaInteger,
	})}
}

func accountingSchema() map[string]any {
	return schema.Strict(map[string]any{
		"worker_runs": schemaInteger, "input_tokens": schemaInteger, "output_tokens": schemaInteger,
		"total_tokens": schemaInteger, "latency_ms": map[string]any{"type": "number", "minimum": 0},
		"files": schemaInteger, "bytes": schemaInteger,
	})
}

func prepareChangeOutputSchema() map[string]any {
	return schema.Strict(map[string]any{
		"change_id":  map[string]any{"type": "string", "pattern": changeIDPattern.String()},
		"status":     schema.Enum(prepareStatuses...),
		"patch_id":   schemaDigest,
		"revision":   map[string]any{"type": "integer", "minimum": 1},
		"operations": operationsSchema(),
		"acceptance": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1},
			"status":    schema.Enum(allCoverageStatuses...),
			"note":      schemaString,
		})},
		"accounting":          accountingSchema(),
		"residual_risks":      schemaStrings,
		"reasons":             schemaStrings,
		"verification_status": map[string]any{"type": "string", "const": "not_requested"},
		"context":             schemaString,
	})
}

// verifyChangeInputSchema is the closed inputSchema of verify_change.
func verifyChangeInputSchema() map[string]any {
	return schema.Object(map[string]any{"change_id": map[string]any{"type": "string", "pattern": changeIDPattern.String()}}, "change_id")
}

func verifyChangeOutputSchema() map[string]any {
	return schema.Strict(map[string]any{
		"change_id": map[string]any{"type": "string", "pattern": changeIDPattern.String()},
		"patch_id":  schemaDigest,
		"revision":  map[string]any{"type": "integer", "minimum": 1},
		"verdict":   schema.Enum(lifecycle.Verdicts...),
		"criteria": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1},
			"status":    schema.Enum(lifecycle.CriterionStatuses...),
			"reason":    schemaString,
		})},
		"operations": operationsSchema(),
		"repair": schema.Strict(map[string]any{
			"status":        schema.Enum(allRepairStatuses...),
			"from_patch_id": schemaDigest,
			"reasons":       schemaStrings,
		}),
		"repair_available": map[string]any{"type": "boolean"},
		"recorded":         map[string]any{"type": "boolean"},
		"tests": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"test":        schemaString,
			"command":     schemaString,
			"outcome":     schema.Enum(lifecycle.TestOutcomes...),
			"duration_ms": map[string]any{"type": "integer", "minimum": 0},
		})},
		"lifecycle_id":        map[string]any{"type": "string", "pattern": `^lcy_[0-9a-f]{24}$`},
		"status":              schemaString,
		"accounting":          accountingSchema(),
		"residual_risks":      schemaStrings,
		"reasons":             schemaStrings,
		"verification_status": schema.Enum(lifecycle.Verdicts...),
		"context":             schemaString,
	})
}
