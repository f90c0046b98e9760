package product

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// userCodexConfig is a ~/.codex/config.toml after the README's quick start:
// the user's model provider, and Needle registered as an MCP server (with
// a second server beside it).
const userCodexConfig = `model = "gpt-x"
model_provider = "corp"
approval_policy = "never"

[model_providers.corp]
name = "Corp"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"

[mcp_servers.needle]
command = "needle"
args = ["mcp", "serve", "--main-model", "gpt-5-codex", "--role-profile", "default"]

[mcp_servers.docs]
url = "https://example.com/mcp"

[projects."/home/you/src/notes"]
trust_level = "trusted"
`

// TestWorkerHome_NoMCPServers: a worker's CODEX_HOME gets codex.home's
// credentials and model provider, never its MCP servers (the quick
// start's needle among them): a worker must not be offered need_context.
func TestWorkerHome_NoMCPServers(t *testing.T) {
	home := t.TempDir()
	MustWriteFile(t, filepath.Join(home, "config.toml"), userCodexConfig)
	MustWriteFile(t, filepath.Join(home, "auth.json"), `{"OPENAI_API_KEY":"sk-test"}`)
	w := &codexWorker{cfg: CodexConfig{Home: home}, dataDir: t.TempDir()}
	dir, err := w.codexHome("b3:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.DecodeFile(filepath.Join(dir, "config.toml"), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["mcp_servers"]; ok {
		t.Errorf("the worker's config.toml keeps the MCP servers: %v", doc["mcp_servers"])
	}
	providers, _ := doc["model_providers"].(map[string]any)
	corp, _ := providers["corp"].(map[string]any)
	if doc["model"] != "gpt-x" || doc["model_provider"] != "corp" || doc["approval_policy"] != "never" || corp["base_url"] != "http://127.0.0.1:9/v1" {
		t.Errorf("the worker's config.toml lost the model settings: %v", doc)
	}
	if auth, err := os.ReadFile(filepath.Join(dir, "auth.json")); err != nil || string(auth) != `{"OPENAI_API_KEY":"sk-test"}` {
		t.Errorf("the worker's auth.json: %q, %v; want codex.home's", auth, err)
	}
}

// TestWorkerConfig: a config without MCP servers is copied byte for byte
// (comments included); one codex cannot read is an error, not a worker
// started with half a configuration.
func TestWorkerConfig(t *testing.T) {
	plain := "# mine\nmodel = \"gpt-x\" # the model\n\n[model_providers.corp]\nbase_url = \"http://127.0.0.1:9/v1\"\n"
	if out, err := workerConfig([]byte(plain)); err != nil || string(out) != plain {
		t.Errorf("workerConfig(no MCP servers) = %q, %v; want it unchanged", out, err)
	}
	inline := "model = \"gpt-x\"\nmcp_servers = { needle = { command = \"needle\", args = [\"mcp\", \"serve\"] } }\n"
	out, err := workerConfig([]byte(inline))
	if err != nil || strings.Contains(string(out), "needle") || !strings.Contains(string(out), `model = "gpt-x"`) {
		t.Errorf("workerConfig(an inline mcp_servers table) = %q, %v; want the model without the servers", out, err)
	}
	if _, err := workerConfig([]byte("[mcp_servers.needle\n")); err == nil || !strings.Contains(err.Error(), "not TOML") {
		t.Errorf("workerConfig(broken TOML) = %v; want an error saying it is not TOML", err)
	}
}
