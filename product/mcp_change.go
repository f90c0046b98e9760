package product

import (
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/schema"
)

// The MCP surface of supervised changes: the closed inputSchemas and the
// outputSchemas of prepare_change and verify_change.

func prepareChangeTool(modern bool) map[string]any {
	tool := map[string]any{
		"name":  "prepare_change",
		"title": "Prepare change",
		"description": "Have a bounded patch worker make a change in a disposable checkout, writing only the declared paths. " +
			"Needle builds the patch itself by comparing trees and rejects any write outside the scopes. Nothing is applied; " +
			"call verify_change with the change_id for an independent verdict.",
		"inputSchema": prepareChangeInputSchema(),
	}
	if modern {
		tool["outputSchema"] = prepareChangeOutputSchema()
	}
	return tool
}

func verifyChangeTool(modern bool) map[string]any {
	tool := map[string]any{
		"name":  "verify_change",
		"title": "Verify change",
		"description": "Verify a prepared change with an independent read-only verifier on a fresh checkout holding the patch. " +
			"A first repairable verdict consumes the one repair and one new verification; there is no second repair and no apply.",
		"inputSchema": schema.Object(map[string]any{"change_id": map[string]any{"type": "string", "pattern": ChangeIDPattern.String()}}, "change_id"),
	}
	if modern {
		tool["outputSchema"] = verifyChangeOutputSchema()
	}
	return tool
}

func prepareChangeInputSchema() map[string]any {
	text := func(maxLen int) map[string]any {
		return map[string]any{"type": "string", "minLength": 1, "maxLength": maxLen}
	}
	ids := map[string]any{"type": "array", "maxItems": MaxChangeRefs, "items": map[string]any{"type": "string", "pattern": "^" + contentid.Regexp + "$"}}
	return schema.Object(map[string]any{
		"task":                text(MaxTaskBytes),
		"acceptance_criteria": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxCriteria, "items": text(MaxCriterionBytes)},
		"scopes": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxScopes, "items": schema.Object(map[string]any{
			"path": text(MaxScopePathBytes),
			"kind": schema.Enum(ScopeExact, ScopeSubtree),
		}, "kind", "path")},
		"artifact_ids": ids,
		"claim_ids":    ids,
		"constraints": schema.Object(map[string]any{
			"max_files": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxPatchFiles},
			"max_bytes": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxPatchBytes},
			"notes":     map[string]any{"type": "array", "maxItems": MaxConstraintNotes, "items": text(MaxNoteBytes)},
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
		"op":         schema.Enum("add", "modify", "delete"),
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
		"change_id":  map[string]any{"type": "string", "pattern": ChangeIDPattern.String()},
		"status":     schema.Enum(ChangePrepared, ChangeRejected, ChangeFailed),
		"patch_id":   schemaDigest,
		"revision":   map[string]any{"type": "integer", "minimum": 1},
		"operations": operationsSchema(),
		"acceptance": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1},
			"status":    schema.Enum("claimed", "not_addressed", "unreported"),
			"note":      schemaString,
		})},
		"accounting":          accountingSchema(),
		"residual_risks":      schemaStrings,
		"reasons":             schemaStrings,
		"verification_status": map[string]any{"type": "string", "const": "not_requested"},
		"context":             schemaString,
	})
}

func verifyChangeOutputSchema() map[string]any {
	return schema.Strict(map[string]any{
		"change_id": map[string]any{"type": "string", "pattern": ChangeIDPattern.String()},
		"patch_id":  schemaDigest,
		"revision":  map[string]any{"type": "integer", "minimum": 1},
		"verdict":   schema.Enum(allVerdicts...),
		"criteria": map[string]any{"type": "array", "items": schema.Strict(map[string]any{
			"criterion": map[string]any{"type": "integer", "minimum": 1},
			"status":    schema.Enum("met", "unmet", "unknown"),
			"reason":    schemaString,
		})},
		"operations": operationsSchema(),
		"repair": schema.Strict(map[string]any{
			"status":        schema.Enum("not_needed", "applied", "rejected", "failed", "exhausted"),
			"from_patch_id": schemaDigest,
			"reasons":       schemaStrings,
		}),
		"repair_available":    map[string]any{"type": "boolean"},
		"recorded":            map[string]any{"type": "boolean"},
		"accounting":          accountingSchema(),
		"residual_risks":      schemaStrings,
		"reasons":             schemaStrings,
		"verification_status": schema.Enum(allVerdicts...),
		"context":             schemaString,
	})
}
