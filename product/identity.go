package product

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// Identity: every durable object is named by its content id, "b3:" and the
// hex BLAKE3-256 of a domain-separation tag and its canonical JSON
// (product/internal/contentid). The tag keeps ids of different kinds apart
// even where their JSON coincides; a tag never changes meaning, so a new
// encoding of an object gets a new tag (".v2"), never an old one.
//
// The leaves own the tags of what they hash themselves: file contents,
// directory listings and snapshots (snapshot.FileTag, DirTag, SnapshotTag)
// and migrations (migrate.DigestTag).
const (
	tagNeed          = "needle.need.v1"           // needIR → need_id
	tagDefinition    = "needle.definition.v1"     // semanticDefinition → definition_id
	tagArtifact      = "needle.artifact.v1"       // Proposal → artifact_id
	tagCertificate   = "needle.certificate.v1"    // an artifact's or a need's certificate body → certificate_id
	tagClaim         = "needle.claim.v1"          // Claim → claim_id
	tagExcerpt       = "needle.excerpt.v1"        // the text of a cited span → Claim.ExcerptDigest
	tagPlan          = "needle.plan.v1"           // a plan's operator DAG → plan_id
	tagResult        = "needle.result.v1"         // NeedResult → result_digest
	tagInvocation    = "needle.invocation.v1"     // what a worker session's prompts depend on → invocation id
	tagChangeRequest = "needle.change_request.v1" // changeRequest → request_id
	tagPatch         = "needle.patch.v1"          // a patch's operations → patch_id
	tagVerdict       = "needle.verdict.v1"        // a verifier's verdict → part of a repair's invocation
	tagProfile       = "needle.profile.v1"        // Profile → a revision's digest
	tagReply         = "needle.reply.v1"          // a reply's text → its digest in replies
	tagRunCache      = "needle.run_cache.v1"      // a repository root, a test run's inputs → its cache directory, its cache key
	tagPromptSet     = "needle.prompt_set.v1"     // a worker kind's prompts, rendered for a sample, and schemas → its digest
	tagPromptProfile = "needle.prompt_profile.v1" // {revision, prompt set digests} → the prompt profile's digest
	tagGrammar       = "needle.grammar.v1"        // the @@need marker grammar and its sample readings → the grammar digest
	tagTransport     = "needle.transport.v1"      // a transport's contract (name, protocol, request schema, grammar, tools) → its digest

	// The change lifecycle (the machine's own tags are in product/lifecycle).
	tagLifecycleRequest   = "needle.lifecycle_request.v1"   // {change request, needs} → freeze.request_id
	tagRoleSettings       = "needle.role_settings.v1"       // {role, sandbox, model, effort} → a frozen role's digest
	tagRoleWorker         = "needle.role_worker.v1"         // {sandbox, model, effort, prompt set and its digest} → what a role's worker is, whatever the role
	tagTestPlan           = "needle.test_plan.v1"           // {artifact, module, package, test} → plan id
	tagTestOutput         = "needle.test_output.v1"         // a test run's kept output → its output digest
	tagTestDependencies   = "needle.test_dependencies.v1"   // TestDependencies → the test evidence's dependencies id
	tagChangeVerification = "needle.change_verification.v1" // a stored verification body → its verification id
	tagChangeProjection   = "needle.change_projection.v1"   // a change's projection → the digest its approval binds
	tagChangeApproval     = "needle.change_approval.v1"     // {change, binding} → a change's approval id
	tagCriterion          = "needle.criterion.v1"           // {number, text} of an acceptance criterion → its redacted digest
)

// mustID returns the content id of a value the product itself built; such a
// value always encodes.
func mustID(tag string, v any) string { return contentid.MustOf(tag, v) }

// idMemo remembers the ids computed by memoID.
var idMemo = contentid.NewMemo(4096)

// memoID is mustID for values asked for on every answer and mostly the
// same (a plan, a need certificate): remembered by their encoding.
func memoID(tag string, v any) string {
	id, err := idMemo.Of(tag, v)
	if err != nil {
		panic(fmt.Sprintf("product: %s does not encode: %v", tag, err))
	}
	return id
}

// mustJSON returns the canonical JSON of a value the product itself built,
// as it is stored.
func mustJSON(v any) string { return contentid.MustCanonical(v) }

// Random ids name what has no content to address: a session, a change.
// They are 96 random bits in hex behind a readable prefix.

// newSessionID returns a fresh session id: prefix, "-", 24 hex digits.
func newSessionID(prefix string) string { return prefix + "-" + randomHex() }

// newChangeID returns a fresh opaque change id (changeIDPattern).
func newChangeID() string { return "chg_" + randomHex() }

func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}
