package appserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake `codex app-server`: a replay peer that
// plays a transcript in the frozen format (product/internal/transcript). s2c lines are
// written as soon as every earlier c2s line has been matched, which
// reproduces the recorded interleavings; each c2s line must match the
// client's next message (kind, method, params modulo placeholders and the
// header's ignoreParamKeys; answers to server requests by id and body).
// Recorded request ids are remapped to the client's. A mismatch is reported
// on stderr and the peer exits 3, which the harness turns into a failure.
const (
	envPeerScript = "APPSERVER_TEST_PEER"     // transcript path, or peerSleep
	envPeerEnd    = "APPSERVER_TEST_PEER_END" // after the script: "" waits for EOF, "exit:N", "hang"
	peerSleep     = "sleep"                   // a process that only holds inherited pipes
	peerTimeout   = 20 * time.Second          // longest wait for a client message
)

func TestMain(m *testing.M) {
	switch v := os.Getenv(envPeerScript); v {
	case "":
		os.Exit(m.Run())
	case peerSleep:
		parkForever()
	default:
		os.Exit(runPeer(v, os.Getenv(envPeerEnd)))
	}
}

// step is one transcript line. Raw, for s2c only, is written verbatim: it
// lets a test send lines that are not JSON.
type step struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg,omitempty"`
	Raw string          `json:"raw,omitempty"`
}

type peer struct {
	steps  []step
	ignore []string
	binds  *strings.Replacer
	idmap  map[string]json.RawMessage // recorded request id -> the client's
	in     <-chan []byte              // client lines; closed at EOF
}

func runPeer(path, end string) int {
	p, err := newPeer(path)
	if err == nil {
		err = p.play()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 3
	}
	return p.finish(end)
}

func newPeer(path string) (*peer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var header struct {
		Match struct {
			IgnoreParamKeys []string `json:"ignoreParamKeys"`
		} `json:"match"`
	}
	if err := json.Unmarshal(lines[0], &header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	p := &peer{ignore: header.Match.IgnoreParamKeys, idmap: map[string]json.RawMessage{}, in: readLines(os.Stdin)}
	for i, l := range lines[1:] {
		var st step
		if err := json.Unmarshal(l, &st); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		p.steps = append(p.steps, st)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	p.binds = placeholders(cwd, os.Getenv("CODEX_HOME"))
	return p, nil
}

// placeholders substitutes ${CWD} and ${CODEX_HOME} inside JSON text.
func placeholders(cwd, home string) *strings.Replacer {
	esc := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	return strings.NewReplacer("${CWD}", esc(cwd), "${CODEX_HOME}", esc(home))
}

// renderS2C is the exact line the peer writes for a recorded s2c message.
func renderS2C(msg json.RawMessage, binds *strings.Replacer) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(binds.Replace(string(msg)))); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func readLines(r io.Reader) <-chan []byte {
	ch := make(chan []byte)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				ch <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

func (p *peer) play() error {
	for i, st := range p.steps {
		var err error
		if st.Dir == DirS2C {
			err = p.emit(st)
		} else {
			err = p.expect(st.Msg)
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}

func (p *peer) emit(st step) error {
	line := []byte(st.Raw)
	if st.Raw == "" {
		line = p.remap(renderS2C(st.Msg, p.binds))
	}
	_, err := os.Stdout.Write(append(line, '\n'))
	return err
}

// remap rewrites the id of a response to a request whose id the client
// chose differently from the recording.
func (p *peer) remap(line []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m["method"] != nil || m["id"] == nil {
		return line
	}
	actual, ok := p.idmap[string(m["id"])]
	if !ok || bytes.Equal(actual, m["id"]) {
		return line
	}
	m["id"] = actual
	out, _ := json.Marshal(m)
	return out
}

func (p *peer) expect(recorded json.RawMessage) error {
	var line []byte
	select {
	case l, ok := <-p.in:
		if !ok {
			return fmt.Errorf("client closed stdin; still expected %.300s", recorded)
		}
		line = l
	case <-time.After(peerTimeout):
		return fmt.Errorf("timed out waiting for %.300s", recorded)
	}
	want, got := decodeAny(p.binds.Replace(string(recorded))), decodeAny(string(line))
	if isRequest(want) && isRequest(got) {
		actual, _ := json.Marshal(got["id"])
		recordedID, _ := json.Marshal(want["id"])
		p.idmap[string(recordedID)] = actual
		delete(want, "id")
		delete(got, "id")
	}
	p.dropIgnored(want)
	p.dropIgnored(got)
	if !reflect.DeepEqual(want, got) {
		p.refuse(line)
		return fmt.Errorf("mismatch\n  expected: %.600s\n  actual:   %.600s", recorded, line)
	}
	return nil
}

// refuse answers an unexpected request the way the replay server does, so
// the client fails fast instead of waiting.
func (p *peer) refuse(line []byte) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m["method"] == nil || m["id"] == nil {
		return
	}
	fmt.Fprintf(os.Stdout, `{"id":%s,"error":{"code":-32600,"message":"replay: unexpected request"}}`+"\n", m["id"])
}

func decodeAny(s string) map[string]any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return map[string]any{"undecodable": s}
	}
	return m
}

func isRequest(m map[string]any) bool { return m["method"] != nil && m["id"] != nil }

// dropIgnored deletes the header's ignoreParamKeys (dotted paths below
// params) from a message.
func (p *peer) dropIgnored(m map[string]any) {
	for _, key := range p.ignore {
		parts := strings.Split(key, ".")
		obj, _ := m["params"].(map[string]any)
		for _, k := range parts[:len(parts)-1] {
			obj, _ = obj[k].(map[string]any)
		}
		delete(obj, parts[len(parts)-1])
	}
}

// finish does what end says once the script is played. By default any
// further client message is an error and EOF a clean exit, like the server.
func (p *peer) finish(end string) int {
	switch {
	case end == "hang":
		hang()
	case strings.HasPrefix(end, "exit:"):
		code, _ := strconv.Atoi(strings.TrimPrefix(end, "exit:"))
		return code
	}
	for line := range p.in {
		fmt.Fprintf(os.Stderr, "peer: unexpected message after the script: %.300s\n", line)
		return 4
	}
	return 0
}

// hang plays a server that ignores stdin EOF and polite signals, with a
// grandchild in its process group holding stdout open.
func hang() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	exe, err := os.Executable()
	if err == nil {
		child := exec.Command(exe)
		child.Env = []string{envPeerScript + "=" + peerSleep}
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		err = child.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer: start grandchild:", err)
	}
	parkForever()
}

// parkForever blocks until the process is killed: a read from a pipe whose
// write end this process holds never returns, and unlike select{} the
// runtime does not call it a deadlock.
func parkForever() {
	r, w, err := os.Pipe()
	if err == nil {
		_, err = r.Read(make([]byte, 1))
		w.Close()
	}
	fmt.Fprintln(os.Stderr, "peer: park:", errors.Join(err, errors.New("woke up")))
	os.Exit(9)
}
