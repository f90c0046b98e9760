// Package replay stands in for `codex app-server` on stdio by replaying
// frozen transcripts (product/internal/transcript), so an App Server client can be
// tested hermetically and fast.
//
// Replay is gated on the client, never on time:
//
//   - Server lines (s2c) are written in recorded order as soon as every
//     earlier client line has been matched. That reproduces the real
//     interleavings (a turn/start response before turn/started, warnings
//     between requests) with no timing in the fixture.
//   - A client line (c2s) is matched strictly against the client's next
//     message: same kind; for requests and notifications the same method and
//     deep-equal params; for answers to server requests the server's recorded
//     id and the same result or error body. ${NAME} placeholders declared in
//     the header bind on first sight in client strings (CWD from
//     thread/start's cwd, "${CWD}/sub" works too) and are substituted into
//     later server lines; Config.Env binds them up front (CODEX_HOME).
//     Keys listed in match.ignoreParamKeys are not compared.
//   - Request ids are remapped: when the recording has client id R and the
//     client used A, recorded responses to R go out with id A, so the
//     client's id scheme may change without refreezing.
//
// Several transcripts may be offered at once, for a process whose scenario
// is decided by what the client sends (the worker identity in thread/start's
// developerInstructions). All candidates consume the client's messages in
// lockstep and those that mismatch drop out; a server line is written only
// when every remaining candidate would write the same bytes. Candidates that
// disagree before a client message has told them apart are an error
// (ErrAmbiguous), never a guess.
//
// A real server changes files too: with Config.ApplyFileChanges, every
// completed fileChange item the replay sends is first re-enacted in the
// bound ${CWD} (effects.go), so a patch worker's edits reach its checkout.
//
// Any mismatch ends the replay: a mismatching request is answered with
// -32600 "replay: unexpected request" (so the client fails fast instead of
// waiting), expected and actual go to stderr, and Serve returns a
// *MismatchError for the caller to turn into a non-zero exit. Once a
// transcript is complete Serve reads on until EOF and returns nil, like the
// real server; any further client message is an error.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// DefaultReadTimeout is Config.ReadTimeout when it is zero.
const DefaultReadTimeout = 30 * time.Second

// Config says what to replay.
type Config struct {
	// Transcripts are the candidates; the one served is chosen by what the
	// client sends. At least one is required.
	Transcripts []*transcript.Transcript
	// Env holds placeholder values known up front, such as CODEX_HOME from
	// the environment. Empty values count as unset.
	Env map[string]string
	// ReadTimeout bounds the wait for the next client message while a
	// transcript still expects one (default DefaultReadTimeout). After the
	// end, Serve waits for EOF as long as ctx allows, as the real server does.
	ReadTimeout time.Duration
	// ApplyFileChanges re-enacts completed fileChange items in ${CWD}
	// (effects.go), as the real server's patches change its directory.
	ApplyFileChanges bool
}

// ErrAmbiguous reports candidate transcripts that disagree on a server
// message before any client message has told them apart.
var ErrAmbiguous = errors.New("ambiguous transcripts")

// MismatchError reports that the client did not do what the transcript
// expects: a different message, an early EOF, a timeout, or a message after
// the end of the transcript.
type MismatchError struct {
	Scenario string
	Step     int             // 1-based index of the expected message among the transcript's lines (file line Step+1)
	Expected json.RawMessage // nil after the end of the transcript
	Actual   json.RawMessage // nil on EOF or timeout
	Reason   string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("replay: scenario %q step %d: %s", e.Scenario, e.Step, e.Reason)
}

// Serve replays cfg's transcripts to the client on stdin and stdout and
// logs diagnostics to stderr. It returns nil when a transcript has been
// replayed completely and the client closed stdin. Cancelling ctx ends a
// wait for the client, not a blocked write to stdout; a reader of stdin
// that never returns outlives Serve until stdin is closed.
func Serve(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := newServer(cfg, stdout)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	err = s.run(ctx, readInput(stdin, done))
	var m *MismatchError
	switch {
	case errors.As(err, &m):
		fmt.Fprintf(stderr, "%v\n  expected: %s\n  actual:   %s\n", m, clip(m.Expected, 1000), clip(m.Actual, 1000))
		return err
	case err != nil:
		err = fmt.Errorf("replay: %w", err)
		fmt.Fprintln(stderr, err)
	}
	return err
}
