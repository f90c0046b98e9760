package product

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const usageStats = `Usage: needle stats [--data-dir DIR] [--json]

Print what Needle saved, from the store of DIR. It writes nothing of its
own (opening an older store applies this binary's pending migrations, as
every command does); a data directory without a store is an error (exit 1)
and none is created.

  answers        needs answered (every recorded resolution)
  hits           answered from certified evidence alone, no worker
                 (exact_hit, coverage_hit, composite_hit, claim_hit);
                 partial hits took only part of their answer from evidence
  tokens saved   worker tokens that reusing evidence avoided, each estimated
                 when it was answered from the mean tokens per obligation of
                 the worker runs before it (0 until a worker has run); and
                 the tokens workers spent
  stale          withheld: needs answered "stale", whose certified evidence
                 no longer matched the source and was not returned;
                 re-proven: changed evidence proven again by proof replay
                 before it was served; superseded: artifacts whose lines
                 moved, replaced by the re-proven one
  proofs         proofs made (artifact certificates, re-proofs included) by
                 how: types (go/types over the exact source), parser
                 (Python's own parser over the exact source), execution
                 (run by Needle in its sandbox), static (only checked
                 statically: every call resolved, nothing run), lexical

Answers are accounted just after they are given, so one a running runtime
gave a moment ago may not be counted yet. --json prints one JSON object.
`

func (c *cli) stats(args []string) int {
	fs := c.flags("stats")
	dataDir := fs.String("data-dir", "", "")
	asJSON := fs.Bool("json", false, "")
	if code, ok := c.parse(fs, usageStats, args); !ok {
		return code
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle stats: --data-dir DIR is required and takes no arguments\n\n%s", usageStats)
		return 2
	}
	if err := c.haveStore(*dataDir); err != nil {
		return c.fail("stats", err)
	}
	h, release, err := c.openDataHome(*dataDir)
	if err != nil {
		return c.fail("stats", err)
	}
	defer release()
	st, err := h.Stats(c.ctx)
	if err != nil {
		return c.fail("stats", err)
	}
	if *asJSON {
		return c.writeJSON(st)
	}
	c.printStats(st)
	return 0
}

// haveStore refuses a data directory without a store, so that reading
// its statistics never creates one. Inside the runtime the store is the
// runtime's.
func (c *cli) haveStore(dataDir string) error {
	if c.rt != nil {
		return nil
	}
	_, err := os.Stat(filepath.Join(c.absPath(dataDir), storeFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{Op: "open store", Kind: kindNotFound, Err: fmt.Errorf("no Needle store in %s", dataDir)}
	}
	return err
}

// printStats writes st as the text of needle stats.
func (c *cli) printStats(st Stats) {
	var kinds []string
	for _, k := range hitKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, st.HitsByKind[string(k)]))
	}
	fmt.Fprintf(c.stdout, "answers       %d\n", st.Answers)
	fmt.Fprintf(c.stdout, "hits          %d (%s); partial hits %d\n", st.Hits, strings.Join(kinds, ", "), st.PartialHits)
	fmt.Fprintf(c.stdout, "tokens saved  %d (estimated); spent %d in %d worker runs\n", st.TokensSaved, st.TokensSpent, st.WorkerRuns)
	fmt.Fprintf(c.stdout, "stale         withheld %d (answered stale, evidence not returned); re-proven %d; superseded %d\n",
		st.Stale.Withheld, st.Stale.Reproven, st.Stale.Superseded)
	fmt.Fprintf(c.stdout, "proofs        types %d, parser %d, execution %d, static %d (only checked statically), lexical %d\n",
		st.Proofs[string(proofTypes)], st.Proofs[string(proofParser)], st.Proofs[string(proofExecution)], st.Proofs[string(proofStatic)], st.Proofs[string(proofLexical)])
}
