package product

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

func TestParseMarker_SeedTwin(t *testing.T) {
	fromJSON, err := compileJSON(MustReadFile(t, "../fixtures/need-context.json"), AllRoutes())
	if err != nil {
		t.Fatal(err)
	}
	line, err := findMarker(string(MustReadFile(t, "../fixtures/need-context.marker")))
	if err != nil {
		t.Fatal(err)
	}
	fromMarker, err := compileMarker(line, AllRoutes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromJSON, fromMarker); diff != "" {
		t.Errorf("marker and JSON twin differ (-json +marker):\n%s", diff)
	}
	jsonReq, _ := DecodeNeedRequest(MustReadFile(t, "../fixtures/need-context.json"))
	markerReq, _ := ParseMarker(line)
	if diff := cmp.Diff(jsonReq, markerReq); diff != "" {
		t.Errorf("typed requests differ (-json +marker):\n%s", diff)
	}
}

func TestParseMarker_OK(t *testing.T) {
	tests := []struct {
		name, line string
		want       NeedRequest
	}{
		{"Minimal", "@@need locate.implementation symbol:Command.Run",
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"symbol", "Command.Run"}}},
		{"QuotedSubject", `@@need locate.implementation behavior:"line \"terminator\" handling"`,
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"behavior", `line "terminator" handling`}}},
		{"SubjectWithColon", "@@need locate.implementation module:golang.org/x/mod:v1",
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"module", "golang.org/x/mod:v1"}}},
		{"TabsAndTrailingBlanks", "@@need\ttests.relevant\tsymbol:Run\t+focused_tests  ",
			NeedRequest{Route: "tests.relevant", Subject: SubjectRequest{"symbol", "Run"},
				Required: []ObligationRequest{{Kind: "focused_tests"}}}},
		{"World", "@@need locate.implementation symbol:Run source=b3:" + strings.Repeat("a", 64) + " platform=linux-amd64 features=cgo,race",
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"symbol", "Run"},
				World: worldRequest{Source: "b3:" + strings.Repeat("a", 64), Platform: "linux-amd64", Features: []string{"cgo", "race"}}}},
		{"DefaultFeatures", "@@need locate.implementation symbol:Run features=default",
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"symbol", "Run"}}},
		{"TaskEscapes", `@@need locate.implementation symbol:Run task="a\tb\nc \\ d"`,
			NeedRequest{Route: "locate.implementation", Subject: SubjectRequest{"symbol", "Run"}, Task: "a\tb\nc \\ d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMarker(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMarker_Invalid(t *testing.T) {
	tests := []struct{ name, line, path, msg string }{
		{"ErrNoPrefix", "@@needs locate.implementation symbol:A", "marker", "want a blank after @@need"},
		{"ErrNoRoute", "@@need", "route", "unexpected end of marker"},
		{"ErrNoSubject", "@@need locate.implementation", "subject", "want the subject as kind:name"},
		{"ErrNoBlankAfterRoute", "@@need locate.implementation\"x\"", "marker", "want a blank and then the subject"},
		{"ErrSubjectWithoutKind", "@@need locate.implementation Run", "subject", "want the subject as kind:name"},
		{"ErrEmptySubjectName", "@@need locate.implementation symbol:", "subject.name", "unexpected end of marker"},
		{"ErrUnterminatedQuote", `@@need locate.implementation behavior:"open`, "subject.name", "unterminated quoted string"},
		{"ErrBadEscape", `@@need locate.implementation behavior:"a\qb"`, "subject.name", `unknown escape \q`},
		{"ErrUnknownClause", "@@need locate.implementation symbol:A depth=3", "marker", `unknown clause "depth"`},
		{"ErrBareWord", "@@need locate.implementation symbol:A stray", "marker", `unknown clause "stray"`},
		{"ErrDuplicateClause", `@@need locate.implementation symbol:A task=a task=b`, "task", "duplicate clause task="},
		{"ErrDuplicateFacet", "@@need trace.state-flow symbol:A +runtime_flow(granularity=summary,granularity=stepwise)", "required[0].granularity", "duplicate facet"},
		{"ErrFacetWithoutValue", "@@need locate.implementation symbol:A +implementation_location(selection)", "required[0].selection", "want selection=value"},
		{"ErrUnterminatedFacets", "@@need locate.implementation symbol:A +implementation_location(selection=primary", "required[0]", "unterminated facet list"},
		{"ErrNoBlankBetweenClauses", "@@need locate.implementation symbol:A +implementation_location(selection=primary)x", "marker", "want a blank between clauses"},
		{"ErrUnknownGranularity", "@@need trace.state-flow symbol:A +runtime_flow(granularity=fine)", "required[0].granularity", "unknown granularity"},
		{"ErrFacetNotTaken", "@@need locate.implementation symbol:A +implementation_location(granularity=stepwise)", "required[0].granularity", "does not take facet"},
		{"ErrDuplicateCapability", "@@need locate.implementation symbol:A +implementation_location +implementation_location", "required[1].kind", "duplicate capability kind"},
		{"ErrRequiredAndPreferred", "@@need locate.implementation symbol:A +focused_tests ?focused_tests", "preferred[0].kind", "both required and preferred"},
		{"ErrTooManyObligations", "@@need locate.implementation symbol:A +implementation_location +runtime_flow +focused_tests +focused_tests", "required", "too many obligations"},
		{"ErrMalformedDigest", "@@need locate.implementation symbol:A source=b3:1234", "world.source", "malformed snapshot digest"},
		{"ErrEmptyPlatform", `@@need locate.implementation symbol:A platform=""`, "world.platform", "empty value"},
		{"ErrUnsortedFeatures", "@@need locate.implementation symbol:A features=b,a", "world.features[1]", "sorted and unique"},
		{"ErrDisabledRoute", "@@need tests.relevant symbol:A", "route", "is not enabled"},
		{"ErrUnknownSubjectKind", "@@need locate.implementation class:A", "subject.kind", "unknown subject kind"},
		{"ErrControlCharacter", "@@need locate.implementation behavior:\"a\x01b\"", "subject.name", "control character"},
		{"ErrInvalidUTF8", "@@need locate.implementation symbol:\xff", "marker", "not valid UTF-8"},
		{"ErrOversized", "@@need locate.implementation symbol:A task=\"" + strings.Repeat("t", maxMarkerBytes) + "\"", "marker", "the limit is 8192"},
	}
	routes := routeSet{routeLocateImplementation, routeTraceStateFlow}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			need, err := compileMarker(tt.line, routes)
			if err == nil {
				t.Fatalf("accepted invalid marker; IR %+v", need.IR)
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindInvalidInput {
				t.Fatalf("error %v is not a KindInvalidInput *Error", err)
			}
			if e.Path != tt.path {
				t.Errorf("path %q, want %q (error: %v)", e.Path, tt.path, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
}

func TestFindMarker(t *testing.T) {
	msg := "I need to know where this lives.\n  @@need locate.implementation symbol:Run\r\nThanks. @@need is how I ask.\n"
	line, err := findMarker(msg)
	if err != nil {
		t.Fatal(err)
	}
	if line != "@@need locate.implementation symbol:Run" {
		t.Errorf("line %q", line)
	}
	for name, msg := range map[string]string{
		"ErrNone":      "no marker here\n@@needle is not one\n",
		"ErrTwo":       "@@need locate.implementation symbol:A\n@@need locate.implementation symbol:B\n",
		"ErrEmptyText": "",
		"ErrFenced":    "Ask like this:\n```\n@@need locate.implementation symbol:A\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := findMarker(msg); KindOf(err) != KindInvalidInput {
				t.Errorf("FindMarker(%q) error %v, want invalid input", msg, err)
			}
		})
	}
}

// TestMarkerLines holds the marker rule of doc.go: a marker is a line of a
// top-level paragraph; shown markers (code, quotes, lists, HTML) are not.
func TestMarkerLines(t *testing.T) {
	const m = "@@need locate.implementation symbol:Greet"
	for _, tc := range []struct {
		name, msg string
		want      int
	}{
		{"Alone", m, 1},
		{"AfterProse", "I need the implementation first.\n" + m, 1},
		{"ThreeSpaces", "   " + m, 1},
		{"FourSpacesIsCode", "    " + m, 0},
		{"TabIsCode", "\t" + m, 0},
		{"IndentedContinuationKept", "text\n  " + m, 1},
		{"TabContinuationNot", "text\n\t" + m, 0},
		{"Fenced", "```\n" + m + "\n```", 0},
		{"TildeFenced", "~~~ text\n" + m + "\n~~~", 0},
		{"UnclosedFence", "```\n" + m, 0},
		{"FencedExampleAndReal", "Like this:\n```\n" + m + "\n```\n" + m, 1},
		{"Quoted", "> " + m, 0},
		{"LazyQuote", "> as you said\n" + m, 0},
		{"QuoteThenBlank", "> as you said\n\n" + m, 1},
		{"ListItem", "- " + m, 0},
		{"LazyListItem", "- step one\n" + m, 0},
		{"ListThenBlank", "- step one\n\n" + m, 1},
		{"InlineCode", "`" + m + "`", 0},
		{"HTMLBlock", "<details>\n" + m + "\n</details>", 0},
		{"AfterHTMLBlock", "<details>\n</details>\n\n" + m, 1},
		{"SetextText", m + "\n---", 1},
		{"Heading", "# " + m, 0},
		{"Two", m + "\n\n" + m, 2},
		{"CRLF", "text\r\n" + m + "\r\n", 1},
		{"NotAWord", "@@needs locate.implementation symbol:Greet", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := markerLines(tc.msg)
			if len(got) != tc.want {
				t.Fatalf("MarkerLines(%q) = %q, want %d", tc.msg, got, tc.want)
			}
			for _, l := range got {
				if l != m {
					t.Errorf("marker line %q, want %q", l, m)
				}
			}
		})
	}
}

// TestMarkerLines_Recorded: the messages the real codex passed to a Stop
// hook (codexhook/testdata): a fenced example is no request, two markers
// are two.
func TestMarkerLines_Recorded(t *testing.T) {
	for name, want := range map[string]int{"stop-marker": 1, "stop-fenced": 0, "stop-two": 2, "stop-none": 0, "stop-malformed": 1} {
		var ev struct {
			Message string `json:"last_assistant_message"`
		}
		if err := json.Unmarshal(MustReadFile(t, "internal/codexhook/testdata/"+name+".json"), &ev); err != nil {
			t.Fatal(err)
		}
		if got := markerLines(ev.Message); len(got) != want {
			t.Errorf("%s: %d markers %q, want %d", name, len(got), got, want)
		}
	}
}

// TestMarkerLines_Oracle compares the rule with an independent CommonMark
// parser (goldmark): a marker is a line of a paragraph or setext heading
// that is a child of the document, starting with @@need after at most
// three spaces.
func TestMarkerLines_Oracle(t *testing.T) {
	const m = "@@need locate.implementation symbol:Greet"
	pieces := []string{m, "  " + m, "    " + m, "> " + m, "- " + m, "1. " + m, "```", "~~~", "text", "", "> text",
		"- text", "  " + m, "<details>", "</details>", "---", "`" + m + "`", "# " + m, "\t" + m}
	r := rand.New(rand.NewPCG(16, 1))
	for range 5000 {
		var lines []string
		for n := 1 + r.IntN(8); n > 0; n-- {
			lines = append(lines, pieces[r.IntN(len(pieces))])
		}
		msg := strings.Join(lines, "\n")
		if got, want := markerLines(msg), goldmarkMarkers(msg); !slices.Equal(got, want) {
			t.Fatalf("MarkerLines(%q) = %q; goldmark says %q", msg, got, want)
		}
	}
}

func goldmarkMarkers(msg string) []string {
	src := []byte(msg)
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	var out []string
	seen := map[int]bool{}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if n.Kind() != ast.KindParagraph && n.Kind() != ast.KindHeading {
			continue
		}
		for i := range n.Lines().Len() {
			l := sort.SearchInts(starts, n.Lines().At(i).Start+1) - 1
			end := len(msg)
			if l+1 < len(starts) {
				end = starts[l+1] - 1
			}
			raw := msg[starts[l]:end]
			if mm := markerRE.FindString(raw); mm != "" && !seen[l] {
				seen[l] = true
				out = append(out, strings.TrimLeft(raw, " "))
			}
		}
	}
	return out
}

var markerRE = regexp.MustCompile(`^ {0,3}@@need(?:[ \t]|$)`)

func TestFormatMarker_RoundTrip(t *testing.T) {
	for _, src := range []string{
		string(MustReadFile(t, "../fixtures/need-context.json")),
		`{"route":"locate.implementation","subject":{"kind":"behavior","name":"a \"quoted\" name, with (parens) = signs"},"world":{"features":["a","b"]},"task":"multi\nline\ttask"}`,
	} {
		req, err := DecodeNeedRequest([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		line, err := FormatMarker(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseMarker(line)
		if err != nil {
			t.Fatalf("ParseMarker(%s): %v", line, err)
		}
		if diff := cmp.Diff(req, back, cmp.Comparer(equalObligations)); diff != "" {
			t.Errorf("marker %s round trip (-want +got):\n%s", line, diff)
		}
	}
}

// equalObligations treats a nil and an empty obligation list alike: JSON can
// write "required":[] and a marker cannot.
func equalObligations(a, b []ObligationRequest) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
}

// FuzzParseMarker feeds arbitrary lines to the marker parser. It must never
// panic, fail only with typed invalid input, and whatever compiles must have
// a JSON twin with the same need_id and a canonical marker that reparses to
// the same request.
func FuzzParseMarker(f *testing.F) {
	f.Add(string(MustReadFile(f, "../fixtures/need-context.marker")))
	f.Add("@@need locate.implementation symbol:Command.Run")
	f.Add(`@@need tests.relevant behavior:"line \"x\"\tendings" +focused_tests(selection=exhaustive) platform=linux-amd64 features=cgo,race task="t"`)
	f.Add("@@need trace.state-flow cli_option:--crlf +runtime_flow(scenario=startup) ?focused_tests source=b3:" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, line string) {
		req, err := ParseMarker(line)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkTwins(t, req, line)
	})
}
