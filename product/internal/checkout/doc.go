// Package checkout materializes the exact snapshot of a source repository in
// a disposable directory for a sandboxed worker, reports what the worker
// changed, and removes the directory verifiably. It knows nothing about
// Needle's domain: it takes a snapshot.Repo and a parent directory.
//
// # Materializing
//
// A git repository with a commit gets a detached linked worktree of the
// snapshot's HEAD commit (`git worktree add --detach`), so a worker can use
// git history; anything else gets a fresh directory. Either way the tree is
// then made equal to the snapshot by comparing content, not by trusting git
// status: a path the snapshot lacks is removed (deleted or ignored files,
// tracked symlinks), a path whose content or executable bit differs is
// rewritten from the source's bytes. Comparing content also absorbs what a
// checkout can do differently from the user's work tree (eol conversion,
// smudge filters, skip-worktree entries). Every rewrite creates a new inode
// through an os.Root, so no file is shared with the source and no symlink
// can lead a write out of the checkout.
//
// The checkout's tree is exactly the snapshot: regular files with the
// snapshot's content and the source's owner-executable bit, and the
// directories holding them (possibly also empty ones, which are not content
// to git or to a snapshot), nothing else.
// Symlinks are not content to the snapshot package, and one in a checkout
// could point a worker's write at the active work tree, so none is kept.
//
// # Verification
//
// Create reads the finished tree back from disk and compares it with the
// expected one path by path (content and executable bit) and by the snapshot
// id, computed as the snapshot package computes it for a plain directory.
// Any failure removes what was created and returns ErrVerify: a checkout that
// cannot be shown to be the snapshot is never handed out.
//
// The only entry the tree may hold besides the snapshot is the `.git` file
// git writes at a worktree's root. It is left out of the id but recorded
// with the baseline, so Verify and Changes report a worker that rewrites it;
// any other `.git` entry is an ordinary change, because a worker-made `.git`
// is exactly what the patch builder must reject.
//
// # Markers and cleanup
//
// Before anything is created, a marker <parent>/<name>.lock records the
// creating process (pid and, on linux, its start time, so a reused pid is
// not mistaken for the creator), the source root and the checkout's kind.
// The checkout is <parent>/<name>. The name is derived from the source and
// the snapshot id when no live checkout holds it (the marker is linked to
// that name, which fails when its marker exists, and given up when a
// directory no marker owns lies there), else random: a checkout of the same
// snapshot made after the last one was removed gets the same path, so a
// build cache that keys on source paths (the go command's) is warm for it.
// Remove deletes the directory, prunes the
// source's worktree registry, checks that the directory is gone and no longer
// registered, and only then deletes the marker; a failed cleanup leaves the
// marker so that Sweep retries it. Sweep, run at start, removes every
// checkout whose creating process is gone.
//
// A cancelled Create does not kill `git worktree add`: git fills a registry
// entry in steps, and one left without its commondir makes every worktree
// command of the repository fail, the user's own included. The add runs to
// its end (bounded by a deadline of its own) and the checkout is then
// rolled back. Remove also clears a half-made entry of its checkout (what a
// crash or that deadline leaves) and overrides the "initializing" lock such
// an add holds, which `worktree remove --force` and prune respect.
//
// # Concurrency
//
// A repository's worktree registry does not survive concurrent git worktree
// commands: an add's half-made entry breaks a simultaneous add, list or
// prune. Every add, remove, prune and list this package runs on a
// repository therefore holds an exclusive lock on the repository, an
// in-process mutex plus a flock of needle-worktrees.lock in its git common
// dir, which excludes other needle processes too. The lock covers only
// those git commands, never the copying of content into a checkout.
//
// Git runs with a scrubbed environment (no inherited GIT_* variables), hooks
// and fsmonitor disabled, in its own process group, with bounded output.
package checkout
