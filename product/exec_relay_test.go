package product

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// compactRelayArg makes this test binary a relay between needle exec and
// the real `codex app-server` (its further arguments): it passes every line
// through, except that when the first turn completes it starts a
// compaction of the thread itself (thread/compact/start, as another client
// of the thread would) and holds that turn's completion back until the
// compaction turn has started. needle exec then sees its turn end and a
// compaction turn begin, and a steer into it is refused by codex
// (activeTurnNotSteerable). The relay's own request and its answer never
// reach needle exec.
const compactRelayArg = "product-test-compact-relay"

// relayID is the id of the relay's own request; needle exec's ids are
// integers, so a string cannot collide.
const relayID = `"compact-relay"`

func serveCompactRelay(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	var wmu sync.Mutex // one line at a time into codex
	send := func(line []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		in.Write(append(line, '\n'))
	}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				send(line[:len(line)-1])
			}
			if err != nil {
				wmu.Lock()
				in.Close()
				wmu.Unlock()
				return
			}
		}
	}()
	relayOut(out, os.Stdout, send)
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// relayOut copies codex's lines to w, starting the compaction at the first
// turn/completed and holding lines back until the compaction turn starts.
func relayOut(r io.Reader, w io.Writer, send func([]byte)) {
	br := bufio.NewReaderSize(r, 1<<20)
	state := 0 // 0 before the first turn ends, 1 compaction asked, 2 done
	var held [][]byte
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = line[:len(line)-1]
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					ThreadID string `json:"threadId"`
				} `json:"params"`
			}
			json.Unmarshal(line, &m)
			switch {
			case string(m.ID) == relayID && m.Method == "":
				// the answer to the relay's request
			case state == 0 && m.Method == "turn/completed":
				held = append(held, line)
				send([]byte(`{"method":"thread/compact/start","id":` + relayID + `,"params":{"threadId":"` + m.Params.ThreadID + `"}}`))
				state = 1
			case state == 1 && m.Method != "turn/started":
				held = append(held, line)
			case state == 1:
				for _, h := range held {
					w.Write(append(h, '\n'))
				}
				held, state = nil, 2
				w.Write(append(line, '\n'))
			default:
				w.Write(append(line, '\n'))
			}
		}
		if err != nil {
			for _, h := range held {
				w.Write(append(h, '\n'))
			}
			return
		}
	}
}
