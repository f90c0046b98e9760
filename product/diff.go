package product

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// ChangeDiff is the unified diff of a change's current patch (by lcy_… or
// chg_…), in the form git apply accepts, against the base the patch was
// made from.
func (e *Engine) ChangeDiff(ctx context.Context, id string) (string, error) {
	lid, err := e.lifecycleIDOf(ctx, id)
	if err != nil {
		return "", err
	}
	var files []patchFile
	if lid != "" {
		v, err := e.readLifecycle(ctx, lid)
		if err != nil {
			return "", err
		}
		if v.State.Patch.ID == "" {
			return "", conflictf("lifecycle %s has no patch (%s)", v.ID, v.State.Where())
		}
		k := &lifecycleKernel{e: e}
		if files, err = k.currentPatch(ctx, v); err != nil {
			return "", err
		}
	} else {
		c, err := e.store.change(ctx, e.root, id)
		if err != nil {
			return "", err
		}
		if c.Current == 0 {
			return "", conflictf("change %s has no patch (%s)", id, c.Status)
		}
		if files, _, err = e.store.patchBlobs(ctx, id, c.Current); err != nil {
			return "", err
		}
	}
	return unifiedDiff(e.root, files)
}

// unifiedDiff writes a git-style unified diff of a patch. The content
// before of each file comes from the work tree when it still has the
// patch's base digest, else from HEAD; a base that cannot be found with
// exactly that digest is an error, never a diff against something else.
func unifiedDiff(root string, files []patchFile) (string, error) {
	var b strings.Builder
	for _, f := range files {
		before, err := baseText(root, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", f.Path, f.Path)
		mode := "100644"
		if f.Executable {
			mode = "100755"
		}
		from, to := "a/"+f.Path, "b/"+f.Path
		switch f.Op {
		case patchAdd:
			fmt.Fprintf(&b, "new file mode %s\n", mode)
			from = "/dev/null"
		case patchDelete:
			fmt.Fprintf(&b, "deleted file mode 100644\n")
			to = "/dev/null"
		}
		b.WriteString(udiff.Unified(from, to, before, f.Content))
	}
	return b.String(), nil
}

func baseText(root string, f patchFile) (string, error) {
	if f.Before == "" {
		return "", nil
	}
	if abs, err := treePath(root, f.Path); err == nil {
		if data, err := os.ReadFile(abs); err == nil && contentid.OfBytes(snapshot.FileTag, data) == f.Before {
			return string(data), nil
		}
	}
	cmd := exec.Command("git", "-C", root, "show", "HEAD:"+f.Path)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	if cmd.Run() == nil && contentid.OfBytes(snapshot.FileTag, out.Bytes()) == f.Before {
		return out.String(), nil
	}
	return "", conflictf("the base of %s (%s) is neither in the work tree nor at HEAD: no diff against anything else", f.Path, f.Before)
}

// lifecyclePatchDiff is the unified diff of a lifecycle's patch in force,
// which must be patchID: a lifecycle that moved on to another patch since
// its detail was read is a conflict, never the diff of the other patch.
func (e *Engine) lifecyclePatchDiff(ctx context.Context, lid, patchID string) (string, error) {
	v, err := e.readLifecycle(ctx, lid)
	if err != nil {
		return "", err
	}
	if v.State.Patch.ID != patchID {
		return "", conflictf("lifecycle %s moved on from patch %s to %q", lid, patchID, v.State.Patch.ID)
	}
	files, err := (&lifecycleKernel{e: e}).currentPatch(ctx, v)
	if err != nil {
		return "", err
	}
	return unifiedDiff(e.root, files)
}
