package product

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMCP_SchemaAgreesWithCompiler feeds the same generated arguments to the
// advertised need_context inputSchema and to the compiler. Whatever the
// schema rejects, the compiler must reject (-32602 before resolution); what
// the schema accepts, the compiler accepts unless it breaks a rule a JSON
// Schema cannot state (a capability kind twice across required and
// preferred, unsorted features, a route minimum's facet conflict).
func TestMCP_SchemaAgreesWithCompiler(t *testing.T) {
	routes := routeSet{routeLocateImplementation, routeTraceStateFlow}
	schema := compileSchema(t, roundTrip(t, needContextInputSchema(routes)))
	rng := rand.New(rand.NewPCG(1, 2))
	var schemaValid, bothAccept int
	for i := range 3000 {
		args := genArguments(rng)
		data, _ := json.Marshal(args)
		serr := schema.Validate(roundTrip(t, args))
		_, cerr := compileJSON(data, routes)
		switch {
		case serr != nil && cerr == nil:
			t.Fatalf("case %d: the schema rejects what the compiler accepts: %s\n%v", i, data, serr)
		case serr == nil && cerr != nil && !schemaCannotState(cerr):
			t.Fatalf("case %d: the compiler rejects a schema-valid request for a reason the schema states: %s\n%v", i, data, cerr)
		case serr == nil:
			schemaValid++
			if cerr == nil {
				bothAccept++
			}
		}
	}
	if schemaValid < 300 || bothAccept < 300 {
		t.Fatalf("the generator is too rarely valid: %d schema-valid, %d accepted by both", schemaValid, bothAccept)
	}
}

// schemaCannotState reports whether a compiler error is one of the rules
// JSON Schema cannot express.
func schemaCannotState(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	msg := e.Err.Error()
	for _, s := range []string{"duplicate capability kind", "both required and preferred", "too many obligations",
		"sorted and unique", "requires", "not a feature name", "leading or trailing white space", "empty subject name"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// genArguments makes need_context arguments that are mostly valid, with
// random damage: unknown keys and values, wrong types, missing fields.
func genArguments(rng *rand.Rand) map[string]any {
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	// damaged returns one of the good values, or (one time in eight) a bad one.
	damaged := func(good []any, bad ...any) any {
		if rng.IntN(8) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	args := map[string]any{
		"route": damaged([]any{"locate.implementation", "trace.state-flow"}, "tests.relevant", "nope", 7),
		"subject": map[string]any{"kind": damaged([]any{"symbol", "cli_option", "test"}, "class", 1),
			// Wide characters at the bound: the schema's maxLength and the
			// compiler must count the same unit (issue 12 item 18).
			"name": damaged([]any{"Run", "--crlf", "a b", wide(maxSubjectNameChars)}, "", 3, wide(maxSubjectNameChars+1))},
	}
	obligation := func() any {
		kind := damaged([]any{"implementation_location", "runtime_flow", "focused_tests"}, "call_graph").(string)
		o := map[string]any{"kind": kind}
		good := map[string][]any{"polarity": {"positive", "negative"}, "selection": {"primary", "representative", "exhaustive"},
			"scenario": {"default", "startup"}, "completeness": {"open_world", "contract_complete"}, "granularity": {"summary", "stepwise"}}
		for _, f := range []string{"polarity", "selection", "scenario", "completeness", "granularity"} {
			if rng.IntN(4) == 0 {
				o[f] = damaged(good[f], "bad value", true)
			}
		}
		if rng.IntN(20) == 0 {
			o["extra"] = "x"
		}
		return o
	}
	for _, list := range []string{"required", "preferred"} {
		if rng.IntN(2) == 0 {
			var obls []any
			for range rng.IntN(3) {
				obls = append(obls, obligation())
			}
			args[list] = obls
		}
	}
	if rng.IntN(2) == 0 {
		args["world"] = map[string]any{"source": pick("current", "b3:"+fmt.Sprintf("%064x", rng.Uint64()), "b3:12"),
			"features": pick("default", []any{"a", "b"}, []any{"b", "a"}, []any{}, "all")}
	}
	if rng.IntN(4) == 0 {
		args["task"] = pick("trace it", 5, wide(maxTaskChars), wide(maxTaskChars+1))
	}
	if rng.IntN(15) == 0 {
		args["colour"] = "red"
	}
	return args
}

// TestMCP_ChangeSchemaAgreesWithDecoder is the same property for
// prepare_change: the advertised inputSchema never accepts what the decoder
// rejects, except for the rules a schema cannot state (blank text, path
// syntax: absolute, unclean, .git, "." as an exact scope).
func TestMCP_ChangeSchemaAgreesWithDecoder(t *testing.T) {
	schema := compileSchema(t, roundTrip(t, prepareChangeInputSchema()))
	rng := rand.New(rand.NewPCG(3, 4))
	var schemaValid, bothAccept int
	for i := range 3000 {
		args := genChangeArguments(rng)
		data, _ := json.Marshal(args)
		serr := schema.Validate(roundTrip(t, args))
		_, derr := DecodeChangeRequest(data)
		switch {
		case serr != nil && derr == nil:
			t.Fatalf("case %d: the schema rejects what the decoder accepts: %s\n%v", i, data, serr)
		case serr == nil && derr != nil && !changeSchemaCannotState(derr):
			t.Fatalf("case %d: the decoder rejects a schema-valid request for a reason the schema states: %s\n%v", i, data, derr)
		case serr == nil:
			schemaValid++
			if derr == nil {
				bothAccept++
			}
		}
	}
	if schemaValid < 300 || bothAccept < 300 {
		t.Fatalf("the generator is too rarely valid: %d schema-valid, %d accepted by both", schemaValid, bothAccept)
	}
}

func changeSchemaCannotState(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	msg := e.Err.Error()
	for _, s := range []string{"empty text", "is empty", "is not relative", "contains a backslash", "not clean", "git metadata", `"." can only be`} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func genChangeArguments(rng *rand.Rand) map[string]any {
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	damaged := func(good []any, bad ...any) any {
		if rng.IntN(10) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	list := func(n int, elem func() any) []any {
		out := []any{}
		for range n {
			out = append(out, elem())
		}
		return out
	}
	args := map[string]any{
		"task": damaged([]any{"fix it", "Add a flag", wide(maxTaskChars)}, "", "   ", 4, strings.Repeat("x", maxTaskChars+1), wide(maxTaskChars+1)),
		"acceptance_criteria": list(damaged([]any{1, 2, 8}, 0, 9).(int), func() any {
			return damaged([]any{"works", "tests pass", wide(maxCriterionChars)}, "", 3, wide(maxCriterionChars+1))
		}),
		"scopes": list(damaged([]any{1, 3, 16}, 0, 17).(int), func() any {
			s := map[string]any{
				"path": damaged([]any{"a.go", "internal", "cmd/x/main.go", wide(maxScopePathChars)}, "", "/abs", "../up", "a/./b", "a/.git/x", ".", 5, wide(maxScopePathChars+1)),
				"kind": damaged([]any{"exact", "subtree"}, "glob", 1),
			}
			if rng.IntN(20) == 0 {
				s["mode"] = "w"
			}
			if rng.IntN(20) == 0 {
				delete(s, "kind")
			}
			return s
		}),
	}
	if rng.IntN(3) == 0 {
		args["artifact_ids"] = list(damaged([]any{0, 2}, 17).(int), func() any {
			return damaged([]any{"b3:" + strings.Repeat("a", 64)}, "b3:zz", 1)
		})
	}
	if rng.IntN(3) == 0 {
		c := map[string]any{}
		if rng.IntN(2) == 0 {
			c["max_files"] = damaged([]any{1, 16}, 0, 17, 1.5, "2")
		}
		if rng.IntN(2) == 0 {
			c["max_bytes"] = damaged([]any{1, maxPatchBytes}, 0, maxPatchBytes+1)
		}
		if rng.IntN(2) == 0 {
			c["notes"] = list(damaged([]any{0, 4}, 5).(int), func() any {
				return damaged([]any{"no API change", wide(maxNoteChars)}, "", 2, wide(maxNoteChars+1))
			})
		}
		if rng.IntN(15) == 0 {
			c["apply"] = true
		}
		args["constraints"] = c
	}
	if rng.IntN(25) == 0 {
		args["force"] = true
	}
	if rng.IntN(25) == 0 {
		delete(args, pick("task", "acceptance_criteria", "scopes").(string))
	}
	return args
}

// wide is n wide characters: n code points, 3n bytes of UTF-8.
func wide(n int) string { return strings.Repeat("界", n) }
