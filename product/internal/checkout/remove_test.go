package checkout

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/filelock"
)

// checkRemoved fails unless c's directory and marker are gone and its
// source registers no worktree but its own.
func checkRemoved(t *testing.T, c *Checkout) {
	t.Helper()
	for _, p := range []string{c.Dir, c.marker} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if c.kind == kindWorktree {
		checkNoWorktrees(t, c.source)
		if admin, _ := os.ReadDir(filepath.Join(c.source, ".git", "worktrees")); len(admin) != 0 {
			t.Errorf(".git/worktrees still holds %v", admin)
		}
	}
}

func TestCheckout_Remove(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			worker(t, c.Dir) // a worker's leftovers must not stop the removal
			if err := c.Remove(ctx); err != nil {
				t.Fatalf("Remove = %v", err)
			}
			checkRemoved(t, c)
			if err := c.Remove(ctx); err != nil {
				t.Errorf("second Remove = %v, want nil", err)
			}
		})
	}
	t.Run("RewrittenPointer", func(t *testing.T) {
		// git refuses to remove a worktree whose .git no longer points back;
		// removal must not depend on git agreeing.
		c := MustCreate(t, MustOpen(t, MustRepo(t, map[string]string{"a.txt": "a"})), t.TempDir())
		MustWrite(t, c.Dir, map[string]string{".git": "gitdir: /nowhere\n"})
		if err := c.Remove(ctx); err != nil {
			t.Fatalf("Remove = %v", err)
		}
		checkRemoved(t, c)
	})
	t.Run("LockedDirectories", func(t *testing.T) {
		c := MustCreate(t, MustOpen(t, t.TempDir()), t.TempDir())
		MustWrite(t, c.Dir, map[string]string{"locked/deep/x": "x"})
		for _, d := range []string{"locked/deep", "locked", "."} {
			if err := os.Chmod(filepath.Join(c.Dir, d), 0o500); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Remove(ctx); err != nil {
			t.Fatalf("Remove = %v", err)
		}
		checkRemoved(t, c)
	})
	// A `git worktree add` killed mid-way leaves its worktree locked
	// ("initializing"), at any of these points.
	for name, interrupt := range map[string]func(t *testing.T, c *Checkout){
		"InterruptedAdd/Locked": func(t *testing.T, c *Checkout) {
			MustGit(t, c.source, "worktree", "lock", "--reason", "initializing", c.Dir)
		},
		"InterruptedAdd/LockedNoDirectory": func(t *testing.T, c *Checkout) {
			MustGit(t, c.source, "worktree", "lock", "--reason", "initializing", c.Dir)
			if err := os.RemoveAll(c.Dir); err != nil {
				t.Fatal(err)
			}
		},
		"InterruptedAdd/NoGitdir": func(t *testing.T, c *Checkout) {
			// Killed after the registry entry and its lock, before gitdir.
			admin := adminDir(t, c)
			MustGit(t, c.source, "worktree", "lock", "--reason", "initializing", c.Dir)
			for _, p := range []string{c.Dir, filepath.Join(admin, "gitdir")} {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			}
		},
		"InterruptedAdd/RelativeGitdir": func(t *testing.T, c *Checkout) {
			// As worktree.useRelativePaths (git 2.48) writes it.
			admin := adminDir(t, c)
			rel, err := filepath.Rel(admin, filepath.Join(c.Dir, ".git"))
			if err != nil {
				t.Fatal(err)
			}
			MustGit(t, c.source, "worktree", "lock", "--reason", "initializing", c.Dir)
			if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte(rel+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(admin, "commondir")); err != nil {
				t.Fatal(err)
			}
		},
		"InterruptedAdd/NoCommondir": func(t *testing.T, c *Checkout) {
			// Killed after gitdir, before commondir: every worktree
			// command of the repository fails until the entry goes.
			admin := adminDir(t, c)
			MustGit(t, c.source, "worktree", "lock", "--reason", "initializing", c.Dir)
			for _, p := range []string{"commondir", "HEAD"} {
				if err := os.RemoveAll(filepath.Join(admin, p)); err != nil {
					t.Fatal(err)
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			// other holds the registry entry named as c (the same
			// snapshot's name), so c's carries git's numeric suffix.
			src := MustRepo(t, map[string]string{"a.txt": "a"})
			other := MustCreate(t, MustOpen(t, src), t.TempDir()) // never touched
			c, err := Create(ctx, MustOpen(t, src), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			interrupt(t, c)
			if err := c.Remove(ctx); err != nil {
				t.Fatalf("Remove = %v", err)
			}
			if err := other.Verify(ctx); err != nil {
				t.Errorf("another checkout of the source: %v", err)
			}
			if err := other.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			checkRemoved(t, c)
		})
	}
	t.Run("ErrCleanup", func(t *testing.T) {
		// The source repository is gone, so nothing can show that the
		// worktree is unregistered: fail, and keep the marker for a sweep.
		src := MustRepo(t, map[string]string{"a.txt": "a"})
		c, err := Create(ctx, MustOpen(t, src), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(src); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(ctx); !errors.Is(err, ErrCleanup) {
			t.Fatalf("Remove = %v, want ErrCleanup", err)
		}
		if _, err := os.Stat(c.marker); err != nil {
			t.Errorf("marker: %v, want kept", err)
		}
	})
}

// adminDir returns c's entry in its source's worktree registry.
func adminDir(t *testing.T, c *Checkout) string {
	t.Helper()
	registry := filepath.Join(c.source, ".git", "worktrees")
	entries, err := os.ReadDir(registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		gitdir, err := os.ReadFile(filepath.Join(registry, e.Name(), "gitdir"))
		if err == nil && strings.TrimSpace(string(gitdir)) == filepath.Join(c.Dir, ".git") {
			return filepath.Join(registry, e.Name())
		}
	}
	t.Fatalf("no registry entry names %s", c.Dir)
	return ""
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("git", "--version")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// setOwner rewrites c's marker as if pid (with start time start) made it.
func setOwner(t *testing.T, c *Checkout, pid int, start string) {
	t.Helper()
	m, err := readMarker(c.marker)
	if err != nil {
		t.Fatal(err)
	}
	m.PID, m.Start = pid, start
	if err := writeMarker(c.marker, m); err != nil {
		t.Fatal(err)
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	git := MustOpen(t, MustRepo(t, map[string]string{"a.txt": "a"}))
	plain := MustOpen(t, t.TempDir())
	alive := MustCreate(t, git, parent)
	deadWorktree := MustCreate(t, git, parent)
	deadCopy := MustCreate(t, plain, parent)
	reused := MustCreate(t, plain, parent)
	setOwner(t, deadWorktree, deadPID(t), "")
	setOwner(t, deadCopy, deadPID(t), "1")
	setOwner(t, reused, os.Getpid(), "1") // our pid, but not our start time
	MustWrite(t, parent, map[string]string{"unrelated.lock": "{}", "co-notours": "x"})

	removed, err := Sweep(ctx, parent)
	if err != nil {
		t.Fatalf("Sweep = %v", err)
	}
	want := []string{deadWorktree.Dir, deadCopy.Dir, reused.Dir}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("Sweep removed %q, want %q", removed, want)
	}
	for _, c := range []*Checkout{deadCopy, reused} {
		checkRemoved(t, c)
	}
	if _, err := os.Lstat(deadWorktree.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still there", deadWorktree.Dir)
	}
	dirs, err := worktrees(ctx, git.Root())
	if err != nil || !slices.Equal(dirs, []string{git.Root(), alive.Dir}) {
		t.Errorf("worktrees = %q, %v; want the source and %s", dirs, err, alive.Dir)
	}
	if err := alive.Verify(ctx); err != nil {
		t.Errorf("live checkout: Verify = %v", err)
	}
	for _, name := range []string{"unrelated.lock", "co-notours"} {
		if _, err := os.Stat(filepath.Join(parent, name)); err != nil {
			t.Errorf("Sweep touched %s: %v", name, err)
		}
	}
	if removed, err := Sweep(ctx, filepath.Join(parent, "missing")); err != nil || len(removed) != 0 {
		t.Errorf("Sweep(missing) = %q, %v; want nothing", removed, err)
	}
}

func TestSweep_CorruptMarker(t *testing.T) {
	parent := t.TempDir()
	dead := MustCreate(t, MustOpen(t, t.TempDir()), parent)
	setOwner(t, dead, deadPID(t), "")
	corrupt := filepath.Join(parent, "co-0123456789abcdef.lock")
	MustWrite(t, parent, map[string]string{filepath.Base(corrupt): `{"pid":0,"kind":"copy"}`})

	removed, err := Sweep(context.Background(), parent)
	if err == nil {
		t.Error("Sweep = nil error, want the corrupt marker reported")
	}
	if !slices.Equal(removed, []string{dead.Dir}) {
		t.Errorf("Sweep removed %q, want %s", removed, dead.Dir)
	}
	if _, err := os.Stat(corrupt); err != nil {
		t.Errorf("corrupt marker: %v, want kept", err)
	}
}

// TestSweep_MarkerGone: a marker listed by Sweep and removed before it is
// read (its checkout's creator finished meanwhile, or another process
// swept it) is nothing to sweep, not an error: with several processes on
// one data directory a finished worker's cleanup must not fail the next
// engine's open.
func TestSweep_MarkerGone(t *testing.T) {
	parent := t.TempDir()
	if c, err := stale(parent, "co-0123456789abcdef.lock"); c != nil || err != nil {
		t.Errorf("stale(a marker gone) = %v, %v; want nothing to sweep", c, err)
	}
}

// TestCreate_Cancelled cancels Create at points spread over its run (git's
// `worktree add` included): whatever the point, a Create that fails leaves
// nothing behind, neither in the parent nor in the source's registry.
func TestCreate_Cancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[filepath.Join("d"+strconv.Itoa(i%10), "f"+strconv.Itoa(i)+".txt")] = strings.Repeat("x", 2000)
	}
	src := MustRepo(t, files)
	repo := MustOpen(t, src)
	start := time.Now()
	first := MustCreate(t, repo, t.TempDir())
	full := time.Since(start)
	failed := 0
	for i := range 24 {
		parent := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), full*time.Duration(i)/20)
		c, err := Create(ctx, repo, parent)
		cancel()
		if err == nil {
			if err := c.Remove(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			failed++
			if errors.Is(err, ErrCleanup) {
				t.Errorf("cancelled after %d/20 of a Create: %v", i, err)
			}
		}
		if left, _ := os.ReadDir(parent); len(left) != 0 {
			t.Errorf("cancelled after %d/20 of a Create: the parent holds %v", i, left)
		}
	}
	if failed == 0 {
		t.Error("no cancellation interrupted a Create")
	}
	dirs, err := worktrees(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{repo.Root(), first.Dir}; !slices.Equal(dirs, want) {
		t.Errorf("worktrees = %q, want %q", dirs, want)
	}
	if admin, _ := os.ReadDir(filepath.Join(src, ".git", "worktrees")); len(admin) != 1 {
		t.Errorf(".git/worktrees holds %v, want only the first checkout's", admin)
	}
}

// TestSweep_LostRace: a sweeper that listed a stale checkout, and lost
// the race to another sweeper that removed it before a live process made
// a new checkout at the same (stable) path, leaves the new one alone; so
// does one that finds the marker held by another sweeper.
func TestSweep_LostRace(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	repo := MustOpen(t, MustRepo(t, map[string]string{"a.txt": "a"}))
	stale := MustCreate(t, repo, parent)
	setOwner(t, stale, deadPID(t), "")
	listed, err := Stale(parent)
	if err != nil || len(listed) != 1 {
		t.Fatalf("Stale = %v, %v", listed, err)
	}
	if removed, err := Sweep(ctx, parent); err != nil || len(removed) != 1 {
		t.Fatalf("the winner's Sweep = %q, %v", removed, err)
	}
	fresh := MustCreate(t, repo, parent)
	if fresh.Dir != stale.Dir {
		t.Fatalf("the new checkout is at %s, not at the freed stable path %s", fresh.Dir, stale.Dir)
	}
	if removed, err := listed[0].sweep(ctx); removed || err != nil {
		t.Errorf("the loser's sweep = %v, %v; want it to leave the new checkout", removed, err)
	}
	if err := fresh.Verify(ctx); err != nil {
		t.Errorf("the new checkout after the loser's sweep: %v", err)
	}

	// A marker another sweeper holds is left to it.
	other := MustCreate(t, repo, parent)
	setOwner(t, other, deadPID(t), "")
	f, err := os.Open(other.marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := filelock.LockFile(ctx, f); err != nil {
		t.Fatal(err)
	}
	listed, _ = Stale(parent)
	for _, c := range listed {
		if removed, err := c.sweep(ctx); removed || err != nil {
			t.Errorf("a held marker's sweep = %v, %v", removed, err)
		}
	}
	f.Close()
	if err := other.Verify(ctx); err != nil {
		t.Errorf("the held checkout: %v", err)
	}
}
