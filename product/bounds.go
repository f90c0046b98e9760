package product

// Bounds on untrusted need input, in one place. A request that exceeds any
// of them is rejected with KindInvalidInput before anything is stored. They
// are part of the transport contract (the MCP inputSchema advertises the same
// numbers), so changing one is a visible interface change. A bound on a
// string that a schema advertises as maxLength counts what JSON Schema
// counts, Unicode code points ("characters" in messages), in the text as
// sent; in bytes that is at most 4 times as much.
const (
	// MaxRequestBytes bounds a need_context request as JSON text.
	MaxRequestBytes = 64 << 10
	// MaxMarkerBytes bounds one @@need marker line.
	MaxMarkerBytes = 8 << 10
	// MaxJSONDepth bounds nesting of JSON arrays and objects; the request
	// itself needs 3 levels.
	MaxJSONDepth = 8
	// MaxSubjectNameChars bounds subject.name (code points).
	MaxSubjectNameChars = 256
	// MaxObligations bounds required[] and preferred[] each, and together.
	// There are only three capability kinds, each at most once.
	MaxObligations = 3
	// MaxTaskChars bounds the free-text task (code points).
	MaxTaskChars = 4096
	// MaxNameBytes bounds a bounded name: a scenario, a platform or a feature.
	MaxNameBytes = 64
	// MaxFeatures bounds world.features when it is a list.
	MaxFeatures = 16
)
