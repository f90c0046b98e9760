package typecheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStructTag(t *testing.T) {
	for in, want := range map[string]structTag{
		`long:"verbose" short:"v" description:"more"`: {"long": {"verbose"}, "short": {"v"}, "description": {"more"}},
		`arg required help:"the input"`:               {"arg": {""}, "required": {""}, "help": {"the input"}}, // kong's bare keys
		`cmd:"" help:"a \"quoted\" help"`:             {"cmd": {""}, "help": {`a "quoted" help`}},
		`default:"a" default:"b"`:                     {"default": {"a", "b"}},
		`kong:"name='sort',short='s',help='a, b'"`:    {"kong": {"name='sort',short='s',help='a, b'"}, "name": {"sort"}, "short": {"s"}, "help": {"a, b"}},
		`kong:"-"`:              {"kong": {"-"}},
		`json:"name,omitempty"`: {"json": {"name,omitempty"}},
		`name:"unterminated`:    {},
		`:"x" a:"y"`:            {"a": {"y"}},
		"":                      {},
	} {
		if diff := cmp.Diff(want, parseStructTag(in)); diff != "" {
			t.Errorf("parseStructTag(%s) (-want +got)\n%s", in, diff)
		}
	}
}

func TestParseGoArg(t *testing.T) {
	for in, want := range map[string]goArgSpec{
		"-v,--verbose":      {long: "verbose", short: "v"},
		"--max-size,env":    {long: "max-size", env: true},
		"env:APP_TOKEN":     {env: true, envName: "APP_TOKEN"},
		"positional":        {positional: true},
		"subcommand:serve":  {subcommand: true},
		"-":                 {ignore: true},
		"required, -q":      {short: "q"},
		"-vv":               {}, // no short name of two letters
		"--x,--y":           {long: "y"},
		"separate,--files":  {long: "files"},
		"":                  {},
		"env:A,positional":  {env: true, envName: "A", positional: true},
		"--dry-run,env:DRY": {long: "dry-run", env: true, envName: "DRY"},
	} {
		if got := parseGoArg(in); got != want {
			t.Errorf("parseGoArg(%q) = %+v, want %+v", in, got, want)
		}
	}
}

// TestKebab names fields as kong does (its camelCase examples).
func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"DryRun": "dry-run", "Verbose": "verbose", "TLSCACert": "tlsca-cert", "TLSVerify": "tls-verify",
		"HTML": "html", "PDFLoader": "pdf-loader", "AString": "a-string", "GL11Version": "gl-11-version",
		"May5": "may-5", "BFG9000": "bfg-9000", "BöseÜberraschung": "böse-überraschung", "vimRPCPlugin": "vim-rpc-plugin",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}
