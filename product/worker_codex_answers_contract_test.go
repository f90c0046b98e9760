//go:build contract

package product

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestContract_WorkerAnswers validates every answer the evidence worker
// gives to a server request against the response schema the pinned codex
// generates (NEEDLE_CODEX_SCHEMA).
func TestContract_WorkerAnswers(t *testing.T) {
	dir := os.Getenv("NEEDLE_CODEX_SCHEMA")
	if dir == "" {
		t.Fatal("NEEDLE_CODEX_SCHEMA is not set: run make test-contract")
	}
	for method, schema := range map[string]string{
		"item/commandExecution/requestApproval": "CommandExecutionRequestApprovalResponse",
		"item/fileChange/requestApproval":       "FileChangeRequestApprovalResponse",
		"item/permissions/requestApproval":      "PermissionsRequestApprovalResponse",
		"mcpServer/elicitation/request":         "McpServerElicitationRequestResponse",
		"execCommandApproval":                   "ExecCommandApprovalResponse",
		"applyPatchApproval":                    "ApplyPatchApprovalResponse",
	} {
		t.Run(method, func(t *testing.T) {
			s, err := jsonschema.NewCompiler().Compile(filepath.Join(dir, schema+".json"))
			if err != nil {
				t.Fatal(err)
			}
			result, rpcErr := answerWorkerRequest(t.Context(), method, nil)
			if rpcErr != nil {
				t.Fatalf("%s answered with an error: %v", method, rpcErr)
			}
			var v any
			b, _ := json.Marshal(result)
			_ = json.Unmarshal(b, &v)
			if err := s.Validate(v); err != nil {
				t.Errorf("answer %s does not match %s: %v", b, schema, err)
			}
		})
	}
	if _, rpcErr := answerWorkerRequest(t.Context(), "item/tool/requestUserInput", nil); rpcErr == nil || rpcErr.Code != -32601 {
		t.Errorf("a read-only worker answered a user-input request: %v", rpcErr)
	}
}
