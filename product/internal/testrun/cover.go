package testrun

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Block is one basic block of a coverage profile.
type Block struct {
	// File is as the profile names it: the package's import path and the
	// file's name.
	File                string
	StartLine, StartCol int
	EndLine, EndCol     int
	NumStmt             int
	Count               int64
}

// Profile is a parsed coverage profile (`go test -coverprofile`).
type Profile struct {
	Mode   string // set, count or atomic
	Blocks []Block
}

// maxProfileLine bounds one line of a profile; a real one is a file name
// and six numbers.
const maxProfileLine = 4096

// ParseProfile reads a coverage profile: a "mode: M" line, then one line
// per block, "file:startLine.startCol,endLine.endCol numStmt count". The
// profile is written by the test binary, which runs the test's code, so it
// is untrusted input: anything malformed is an error, never a guess.
// Blocks listed more than once (profiles merged from several runs) are
// combined: their counts added.
func ParseProfile(r io.Reader) (*Profile, error) {
	br := bufio.NewReaderSize(r, maxProfileLine+1)
	p := &Profile{}
	index := map[blockKey]int{}
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("coverage profile line %d: longer than %d bytes", n, maxProfileLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		text := strings.TrimRight(string(line), "\r\n")
		switch {
		case n == 1:
			mode, ok := strings.CutPrefix(text, "mode: ")
			if !ok || (mode != "set" && mode != "count" && mode != "atomic") {
				return nil, fmt.Errorf("coverage profile: first line %q is not a mode line", text)
			}
			p.Mode = mode
		case text != "":
			b, perr := parseBlock(text)
			if perr != nil {
				return nil, fmt.Errorf("coverage profile line %d: %w", n, perr)
			}
			k := b.key()
			if i, ok := index[k]; ok {
				if p.Blocks[i].NumStmt != b.NumStmt {
					return nil, fmt.Errorf("coverage profile line %d: block listed with %d and %d statements", n, p.Blocks[i].NumStmt, b.NumStmt)
				}
				p.Blocks[i].Count += b.Count
				if p.Blocks[i].Count < 0 {
					return nil, fmt.Errorf("coverage profile line %d: count overflows", n)
				}
				continue
			}
			index[k] = len(p.Blocks)
			p.Blocks = append(p.Blocks, b)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if p.Mode == "" {
		return nil, errors.New("coverage profile: empty")
	}
	return p, nil
}

func parseBlock(s string) (Block, error) {
	colon := strings.LastIndexByte(s, ':')
	if colon <= 0 {
		return Block{}, errors.New("no file name")
	}
	b := Block{File: s[:colon]}
	f := strings.Fields(s[colon+1:])
	if len(f) != 3 {
		return Block{}, errors.New("want position, statements and count")
	}
	start, end, ok := strings.Cut(f[0], ",")
	if !ok {
		return Block{}, errors.New("malformed position")
	}
	var err error
	if b.StartLine, b.StartCol, err = lineCol(start); err != nil {
		return Block{}, err
	}
	if b.EndLine, b.EndCol, err = lineCol(end); err != nil {
		return Block{}, err
	}
	if b.EndLine < b.StartLine || (b.EndLine == b.StartLine && b.EndCol < b.StartCol) {
		return Block{}, errors.New("block ends before it starts")
	}
	if b.NumStmt, err = strconv.Atoi(f[1]); err != nil || b.NumStmt < 0 {
		return Block{}, errors.New("malformed statement count")
	}
	if b.Count, err = strconv.ParseInt(f[2], 10, 64); err != nil || b.Count < 0 {
		return Block{}, errors.New("malformed count")
	}
	return b, nil
}

func lineCol(s string) (int, int, error) {
	l, c, ok := strings.Cut(s, ".")
	line, err1 := strconv.Atoi(l)
	col, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil || line < 1 || col < 1 {
		return 0, 0, fmt.Errorf("malformed position %q", s)
	}
	return line, col, nil
}

type blockKey struct {
	file                                 string
	startLine, startCol, endLine, endCol int
}

func (b Block) key() blockKey {
	return blockKey{b.File, b.StartLine, b.StartCol, b.EndLine, b.EndCol}
}

// ExecutedIn returns the blocks of file that lie within lines [start, end]
// and ran more often in p than in base: what the test executed beyond what
// package initialization and TestMain execute by themselves. A nil base
// counts nothing.
func (p *Profile) ExecutedIn(base *Profile, file string, start, end int) []Block {
	return p.executedBeyond(base, file, func(b Block) bool { return b.StartLine >= start && b.EndLine <= end })
}

// ExecutedAt returns the blocks of file that hold the position line:col
// (1-based, byte columns as go/token counts them) and ran more often in p
// than in base.
func (p *Profile) ExecutedAt(base *Profile, file string, line, col int) []Block {
	return p.executedBeyond(base, file, func(b Block) bool { return b.holds(line, col) })
}

// executedBeyond returns the blocks of file that match and ran more often
// in p than in base (nil: counts nothing).
func (p *Profile) executedBeyond(base *Profile, file string, match func(Block) bool) []Block {
	before := map[blockKey]int64{}
	if base != nil {
		for _, b := range base.Blocks {
			if b.File == file {
				before[b.key()] = b.Count
			}
		}
	}
	var out []Block
	for _, b := range p.Blocks {
		if b.File == file && match(b) && b.Count > before[b.key()] {
			out = append(out, b)
		}
	}
	return out
}

// holds reports whether the block's range holds the position: from its
// start up to, not including, its end.
func (b Block) holds(line, col int) bool {
	after := line > b.StartLine || line == b.StartLine && col >= b.StartCol
	before := line < b.EndLine || line == b.EndLine && col < b.EndCol
	return after && before
}

// Covers reports whether the profile has any block of file: whether file
// was instrumented at all.
func (p *Profile) Covers(file string) bool {
	for _, b := range p.Blocks {
		if b.File == file {
			return true
		}
	}
	return false
}
