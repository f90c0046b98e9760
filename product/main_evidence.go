package product

import (
	"fmt"

	"github.com/needle-dev/needle/product/internal/enum"
)

const usageEvidenceSchema = `Usage: needle evidence schema KIND

Print the strict JSON Schema of a proposal of KIND (implementation_location,
runtime_flow or focused_tests): every property required and
additionalProperties false at every level, usable as a Codex outputSchema.
`

func (c *cli) evidenceSchema(args []string) int {
	fs := c.flags("evidence schema")
	if code, ok := c.parse(fs, usageEvidenceSchema, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle evidence schema: want one KIND\n\n%s", usageEvidenceSchema)
		return 2
	}
	kind, ok := parseCapabilityKind(fs.Arg(0))
	if !ok {
		return c.fail("evidence schema", invalidf("evidence.schema", "kind", "unknown proposal kind %q; want %s", fs.Arg(0), enum.List(allCapabilities)))
	}
	schema, err := proposalSchema(kind)
	if err != nil {
		return c.fail("evidence schema", err)
	}
	fmt.Fprintf(c.stdout, "%s\n", schema)
	return 0
}

const usageEvidencePropose = `Usage: needle evidence propose [--repository DIR] [--data-dir DIR] FILE|-

Validate a proposal (JSON; - for stdin) against the current source of the
repository with Needle's trusted validators (code, never a model), store the
attempt, and print one JSON object:
  {"status": "certified"|"rejected"|"undecided", "artifact_id", "certificate_id",
   "reasons": [...], "undecided": [...]}

A certified proposal becomes evidence that later needs can reuse while it
stays fresh. A rejected one (proven false) is stored with its reasons and
never served. An undecided one is neither: its proof needs what this
machine lacks (the types of a dependency missing from the module cache, a
working sandbox, a Go toolchain, a run within its deadline); "undecided"
names it. It is kept, never served, and tried again when a need about its
subject could use it, or at 'needle evidence refresh'.

Proposal shapes (see 'needle evidence schema KIND'):
  {"kind":"implementation_location","subject":{...},"path":"cmd.go","start_line":10,"end_line":20}
  {"kind":"runtime_flow","subject":{...},"scenario":"default","steps":[{"path","start_line","end_line","summary"}]}
  {"kind":"focused_tests","subject":{...},"tests":[{"path","name"}]}

Go locations are proven with go/types. A Go focused test is proven only by
Needle running it in a sandbox (see tests.codex in 'needle config'); a
test's "command" is a hint, never kept. A flow is proven by running its
scenario (a test, a command with arguments, or prose Needle maps to one;
"default" lets Needle choose among the steps' packages' tests); a flow no
run shows but whose every call go/types resolves is certified "static".
Paths may be written ./x.go; files must be regular files of the snapshot.

Exit status: 0 certified, 1 rejected or failure, 2 invalid input, 4 undecided.
`

func (c *cli) evidencePropose(args []string) int {
	fs := c.flags("evidence propose")
	repo := fs.String("repository", "", "")
	dataDir := fs.String("data-dir", "", "")
	if code, ok := c.parse(fs, usageEvidencePropose, args); !ok {
		return code
	}
	if *repo == "" || *dataDir == "" || fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle evidence propose: --repository, --data-dir and one FILE are required\n\n%s", usageEvidencePropose)
		return 2
	}
	data, err := c.readInput(fs.Arg(0), maxProposalBytes)
	if err != nil {
		return c.fail("evidence propose", err)
	}
	if _, err := decodeProposal(data); err != nil {
		return c.fail("evidence propose", err)
	}
	eng, err := c.validatingEngine(Config{DataDir: *dataDir, Repository: *repo, Transport: "cli"})
	if err != nil {
		return c.fail("evidence propose", err)
	}
	defer eng.Close()
	res, err := eng.Propose(c.ctx, data)
	if err != nil {
		return c.fail("evidence propose", err)
	}
	if code := c.writeJSON(res); code != 0 {
		return code
	}
	switch res.Status {
	case OutcomeCertified:
		return 0
	case OutcomeUndecided:
		return 4
	}
	return 1
}

const usageEvidenceRefresh = `Usage: needle evidence refresh [--repository DIR] [--data-dir DIR]

Re-prove, now, the certified evidence of the repository whose files changed
(after a checkout, a version bump, an edit), and renew the need certificates
of the needs asked in it, so that the next ask of each is an exact hit
instead of a proof replay at need time. It certifies exactly what a need
would: the same validators (a cited test runs again in the sandbox), the
same resolver, no worker. Evidence whose proof fails stays unserved. Useful
from a git post-checkout or post-merge hook; 'needle mcp serve' does it by
itself in the background.

Prints one JSON object: {"evidence", "fresh", "reproven", "stale", "needs",
"renewed", "unanswerable", "ms"}.

Exit status: 0 done, 1 failure, 2 invalid input.
`

func (c *cli) evidenceRefresh(args []string) int {
	fs := c.flags("evidence refresh")
	repo := fs.String("repository", "", "")
	dataDir := fs.String("data-dir", "", "")
	if code, ok := c.parse(fs, usageEvidenceRefresh, args); !ok {
		return code
	}
	if *repo == "" || *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle evidence refresh: --repository and --data-dir are required, and nothing else\n\n%s", usageEvidenceRefresh)
		return 2
	}
	eng, err := c.validatingEngine(Config{DataDir: *dataDir, Repository: *repo, Transport: "cli", CacheOnly: true})
	if err != nil {
		return c.fail("evidence refresh", err)
	}
	defer eng.Close()
	rep, err := eng.Refresh(c.ctx)
	if err != nil {
		return c.fail("evidence refresh", err)
	}
	return c.writeJSON(rep)
}

// validatingEngine opens an engine for cfg that runs the validators' tests
// as the data directory's settings say. The worker command only says where
// codex is (its sandbox runs the tests); one that does not resolve just
// leaves that to PATH.
func (c *cli) validatingEngine(cfg Config) (*Engine, error) {
	codex, _ := c.codexConfig(cfg.DataDir, "")
	tests, err := c.testsConfig(cfg.DataDir, codex)
	if err != nil {
		return nil, err
	}
	cfg.Tests = tests
	return c.openEngine(cfg)
}
