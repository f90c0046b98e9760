package product

// Bounds on untrusted need input, in one place. A request that exceeds any
// of them is rejected with KindInvalidInput before anything is stored. They
// are part of the transport contract (the MCP inputSchema advertises the same
// numbers), so changing one is a visible interface change. A bound on a
// string that a schema advertises as maxLength counts what JSON Schema
// counts, Unicode code points ("characters" in messages), in the text as
// sent; in bytes that is at most 4 times as much.
const (
	// maxRequestBytes bounds a need_context request as JSON text.
	maxRequestBytes = 64 << 10
	// maxMarkerBytes bounds one @@need marker line.
	maxMarkerBytes = 8 << 10
	// maxJSONDepth bounds nesting of JSON arrays and objects; the request
	// itself needs 3 levels.
	maxJSONDepth = 8
	// maxSubjectNameChars bounds subject.name (code points).
	maxSubjectNameChars = 256
	// maxObligations bounds required[] and preferred[] each, and together.
	// There are only three capability kinds, each at most once.
	maxObligations = 3
	// maxTaskChars bounds the free-text task (code points).
	maxTaskChars = 4096
	// maxNameBytes bounds a bounded name: a scenario, a platform or a feature.
	maxNameBytes = 64
	// maxFeatures bounds world.features when it is a list.
	maxFeatures = 16
)
