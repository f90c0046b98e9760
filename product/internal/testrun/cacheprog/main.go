// Command needle-cacheprog is the GOCACHEPROG of the go commands a test
// runs inside the sandbox: it reads Needle's shared build cache, which is
// read-only there, and keeps what they build in the run's own directory.
//
//	needle-cacheprog SHARED OWN
//
// SHARED is the shared GOCACHE (written only by the go command outside
// the sandbox); OWN is a directory of the run's box. A get looks in OWN,
// then in SHARED; a put writes to OWN alone. Both use the go command's
// own layout (XX/ACTIONID-a index entries, XX/OUTPUTID-d outputs), read
// as strictly as the go command reads it: an entry that is not exactly
// that is a miss. So a test that runs the go command no longer compiles
// the standard library into a throwaway cache, and nothing it runs can
// write what a later run trusts. Nothing but the standard library is
// imported: Needle builds this file alone (testrun's buildOwn).
//
// The protocol is the go command's (cmd/go/internal/cacheprog): one JSON
// object per line each way; the first response announces the commands.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

const (
	hashSize  = 32
	hexSize   = 2 * hashSize
	entrySize = 2 + 1 + hexSize + 1 + hexSize + 1 + 20 + 1 + 20 + 1
)

func main() {
	if len(os.Args) != 3 || !filepath.IsAbs(os.Args[1]) || !filepath.IsAbs(os.Args[2]) {
		fmt.Fprintln(os.Stderr, "usage: needle-cacheprog SHARED OWN (absolute directories)")
		os.Exit(2)
	}
	c := cache{roots: []string{os.Args[2], os.Args[1]}}
	if err := serve(os.Stdin, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "needle-cacheprog:", err)
		os.Exit(1)
	}
}

// cache is the run's own directory (roots[0], written) over the shared
// one (roots[1], only read).
type cache struct{ roots []string }

func serve(in io.Reader, out io.Writer, c cache) error {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	send := func(r response) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := send(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var res response
		switch req.Command {
		case "get":
			res = c.get(req.ActionID)
		case "put":
			var body []byte // the body follows as a JSON string of base64
			if req.BodySize > 0 {
				if err := dec.Decode(&body); err != nil {
					return fmt.Errorf("put %d: body: %w", req.ID, err)
				}
			}
			res = c.put(req, body)
		case "close":
			return send(response{ID: req.ID})
		default:
			res.Err = "unknown command " + strconv.Quote(req.Command)
		}
		res.ID = req.ID
		if err := send(res); err != nil {
			return err
		}
	}
}

func path(root string, id []byte, suffix string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(root, h[:2], h+"-"+suffix)
}

func (c cache) get(action []byte) response {
	if len(action) != hashSize {
		return response{Err: "bad action id"}
	}
	for _, root := range c.roots {
		if res, ok := lookup(root, action); ok {
			return res
		}
	}
	return response{Miss: true}
}

// lookup reads root's index entry for action as the go command does
// (cmd/go/internal/cache: exactly entrySize bytes, "v1 ACTION OUTPUT SIZE
// TIME\n") and finds its output file, of that size.
func lookup(root string, action []byte) (response, bool) {
	f, err := os.Open(path(root, action, "a"))
	if err != nil {
		return response{}, false
	}
	defer f.Close()
	e := make([]byte, entrySize+1)
	if n, err := io.ReadFull(f, e); n != entrySize || !errors.Is(err, io.ErrUnexpectedEOF) {
		return response{}, false
	}
	e = e[:entrySize]
	if string(e[:3]) != "v1 " || e[3+hexSize] != ' ' || e[4+2*hexSize] != ' ' || e[5+2*hexSize+20] != ' ' || e[entrySize-1] != '\n' {
		return response{}, false
	}
	if got, err := hex.DecodeString(string(e[3 : 3+hexSize])); err != nil || string(got) != string(action) {
		return response{}, false
	}
	output, err := hex.DecodeString(string(e[4+hexSize : 4+2*hexSize]))
	if err != nil {
		return response{}, false
	}
	size, err := strconv.ParseInt(strings.TrimLeft(string(e[5+2*hexSize:5+2*hexSize+20]), " "), 10, 64)
	if err != nil || size < 0 {
		return response{}, false
	}
	nanos, err := strconv.ParseInt(strings.TrimLeft(string(e[6+2*hexSize+20:entrySize-1]), " "), 10, 64)
	if err != nil || nanos < 0 {
		return response{}, false
	}
	disk := path(root, output, "d")
	if fi, err := os.Stat(disk); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return response{}, false
	}
	t := time.Unix(0, nanos)
	return response{OutputID: output, Size: size, Time: &t, DiskPath: disk}, true
}

// put writes body and the index entry into the run's own directory, each
// through a rename, so a concurrent get reads a whole file or none.
func (c cache) put(req request, body []byte) response {
	if len(req.ActionID) != hashSize || len(req.OutputID) != hashSize || int64(len(body)) != req.BodySize {
		return response{Err: "bad put"}
	}
	own := c.roots[0]
	disk := path(own, req.OutputID, "d")
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, len(body), time.Now().UnixNano())
	for file, data := range map[string][]byte{disk: body, path(own, req.ActionID, "a"): []byte(entry)} {
		if err := writeFile(file, data); err != nil {
			return response{Err: err.Error()}
		}
	}
	return response{DiskPath: disk}
}

func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}
