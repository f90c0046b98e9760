package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A real App Server changes files, not only the wire: a patch worker's
// apply_patch edits its working directory. A replay that only replayed
// messages would leave the client's checkout untouched, so the replay
// re-enacts every completed fileChange item it sends (item/completed with
// status "completed"): an add writes the recorded content, a delete removes
// the file, an update applies the recorded unified diff hunks strictly
// (every context and removed line must match, or the replay fails). Writes
// go through an os.Root of the bound ${CWD} and a path outside it is an
// error: a transcript can never make the replay write elsewhere.

// fileChangeItem is the part of an item/completed notification a replay
// re-enacts.
type fileChangeItem struct {
	Method string `json:"method"`
	Params struct {
		Item struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Changes []struct {
				Path string `json:"path"`
				Kind struct {
					Type     string  `json:"type"`
					MovePath *string `json:"move_path"`
				} `json:"kind"`
				Diff string `json:"diff"`
			} `json:"changes"`
		} `json:"item"`
	} `json:"params"`
}

func (s *server) reenact(line []byte, cwd string) error {
	if !s.apply {
		return nil
	}
	return reenact(line, cwd)
}

// reenact applies the file changes of a rendered server line, if it is a
// completed fileChange item, under cwd.
func reenact(line []byte, cwd string) error {
	if !strings.Contains(string(line), `"fileChange"`) {
		return nil
	}
	var n fileChangeItem
	if err := json.Unmarshal(line, &n); err != nil || n.Method != "item/completed" ||
		n.Params.Item.Type != "fileChange" || n.Params.Item.Status != "completed" {
		return nil
	}
	if cwd == "" {
		return errors.New("a fileChange item to re-enact, but ${CWD} is not bound")
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, ch := range n.Params.Item.Changes {
		rel, err := local(cwd, ch.Path)
		if err != nil {
			return err
		}
		switch ch.Kind.Type {
		case "add":
			err = writeFile(root, rel, []byte(ch.Diff))
		case "delete":
			err = root.Remove(rel)
		case "update":
			err = update(root, cwd, rel, ch.Diff, ch.Kind.MovePath)
		default:
			err = fmt.Errorf("unknown change kind %q", ch.Kind.Type)
		}
		if err != nil {
			return fmt.Errorf("re-enact %s of %s: %w", ch.Kind.Type, ch.Path, err)
		}
	}
	return nil
}

// local turns a recorded path (absolute, or relative to cwd) into a local
// path under cwd.
func local(cwd, p string) (string, error) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(cwd, p)
		if err != nil {
			return "", err
		}
		p = rel
	}
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("%s lies outside the working directory", p)
	}
	return p, nil
}

func update(root *os.Root, cwd, rel, diff string, movePath *string) error {
	old, err := root.ReadFile(rel)
	if err != nil {
		return err
	}
	data, err := applyHunks(string(old), diff)
	if err != nil {
		return err
	}
	if movePath == nil {
		return writeFile(root, rel, []byte(data))
	}
	dst, err := local(cwd, *movePath)
	if err != nil {
		return err
	}
	if err := writeFile(root, dst, []byte(data)); err != nil {
		return err
	}
	return root.Remove(rel)
}

// writeFile replaces rel's content, keeping its mode when it exists.
func writeFile(root *os.Root, rel string, data []byte) error {
	perm := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		perm = fi.Mode().Perm()
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return root.WriteFile(rel, data, perm)
}

// applyHunks applies the hunks of a unified diff (no file headers, as the
// App Server reports an update) to text. Every context and removed line
// must match the text where its hunk header says.
func applyHunks(text, diff string) (string, error) {
	lines := splitLines(text)
	var out []string
	next := 0 // index in lines of the first line not yet copied
	dl := splitLines(diff)
	for i := 0; i < len(dl); {
		start, err := hunkStart(dl[i])
		if err != nil {
			return "", fmt.Errorf("diff line %d: %w", i+1, err)
		}
		i++
		at := max(start-1, 0) // 1-based; 0 for an empty old range
		if at < next || at > len(lines) {
			return "", fmt.Errorf("hunk at old line %d is out of order or past the end", start)
		}
		out = append(out, lines[next:at]...)
		next = at
		prev := byte(0) // the kind of the previous diff line
		for ; i < len(dl) && !strings.HasPrefix(dl[i], "@@"); i++ {
			l := dl[i]
			switch {
			case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
				// It is about the line before it: after a removed line it
				// says something of the old file only.
				n := len(out) - 1
				if prev != '-' && n >= 0 && strings.HasSuffix(out[n], "\n") {
					out[n] = strings.TrimSuffix(out[n], "\n")
				}
			case strings.HasPrefix(l, "+"):
				out = append(out, l[1:])
			case strings.HasPrefix(l, " "), strings.HasPrefix(l, "-"):
				if next >= len(lines) || lines[next] != l[1:] && strings.TrimSuffix(lines[next], "\n") != strings.TrimSuffix(l[1:], "\n") {
					return "", fmt.Errorf("hunk at old line %d does not match the file at line %d", start, next+1)
				}
				if l[0] == ' ' {
					out = append(out, lines[next])
				}
				next++
			default:
				return "", fmt.Errorf("diff line %d: unexpected %q", i+1, l)
			}
			if l != "" {
				prev = l[0]
			}
		}
	}
	out = append(out, lines[next:]...)
	return strings.Join(out, ""), nil
}

// splitLines splits text after every newline, keeping them.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// hunkStart parses "@@ -a[,b] +c[,d] @@" and returns a.
func hunkStart(h string) (int, error) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return 0, fmt.Errorf("want a hunk header, got %q", strings.TrimSpace(h))
	}
	end := strings.IndexAny(rest, ", ")
	if end < 0 {
		return 0, fmt.Errorf("malformed hunk header %q", strings.TrimSpace(h))
	}
	return strconv.Atoi(rest[:end])
}
