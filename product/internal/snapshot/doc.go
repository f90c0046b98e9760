// Package snapshot represents a source repository — a git work tree or a
// plain directory — at a moment, and serves the content digests that
// freshness checks compare against.
//
// A Repo is opened at a root directory. It is a git repository exactly when
// the root lies in a git work tree, at its top level or below it; then its
// file set is what git sees under the root (tracked files plus untracked
// files that are not ignored), under the whole work tree's ignore rules.
// Otherwise it is a plain directory whose file set is a walk that skips
// .git. A .git entry at or above the root that git does not accept (a
// garbage HEAD, a directory that is not a repository, no git installed) is
// an error: ignore rules are never dropped silently. Either
// way only regular files count: symlinks, submodules and devices are not
// content. Ignored tells whether a path is left out because it is ignored:
// by git's ignore rules (tracked files never are), or, in either kind of
// repository, for lying in or being a .git.
//
// # Digests
//
// A file's digest is contentid.OfBytes(FileTag, content). A directory's
// digest (DirDigest) covers the sorted names of the regular files and
// subdirectories directly in it, so it changes when an entry is added or
// removed and not when a file's content changes; it is the dependency of
// exhaustive and negative evidence ("nothing else in this directory"). A
// Snapshot's ID is contentid.Of(SnapshotTag, files) over the sorted
// [path, digest] list: the same content has the same id on any machine,
// whatever the root's path, timestamps or git state.
//
// # Stat cache
//
// Freshness must cost O(dependencies), not O(repository), so FileDigest
// answers from a StatCache when it can. An entry remembers a file's size,
// mtime, ctime and inode together with its digest and the wall-clock time
// the digest was computed. It is trusted only when all four stat fields
// still match and it was recorded more than RacyWindow after the file's
// last change (max of mtime and ctime). The second condition is git's
// racy-clean rule: a file rewritten with the same size within one timestamp
// tick of the hash keeps an identical stat, and only the gap between the
// change and the recording proves the hash saw the final content. Such a
// racily clean entry is rehashed on every lookup until the window has
// passed, at which point a fresh, trusted entry replaces it.
//
// The recording time is taken before the file is opened, so any write the
// hash could have missed happened after it; that write's timestamp is at
// least the recording time minus one tick, which fails the window test as
// long as the file system's timestamp granularity is below RacyWindow.
//
// One change the stat cannot see, here as in git's index: a write through
// a shared memory mapping (mmap with MAP_SHARED) after its page was first
// dirtied need not update mtime or ctime (the kernel stamps the file when a
// clean page is first written to, not on every store to a page already
// dirty), so a file rewritten in place that way can keep its size, inode
// and timestamps after its digest was taken, and the cache keeps trusting
// that digest.
// Programs that edit source files through writable shared mappings are
// rare; after one has, touch the file (or change it any other way), which
// makes the stat differ and the next lookup rehash it — the same remedy as
// `git update-index --really-refresh` for git's index. Not trusting the
// stat at all would cost O(repository) on every freshness check.
//
// A directory's digest is cached the same way: an entry watches what git's
// listing of the directory depends on (its own lstat, the index and the
// ignore inputs, a witness below each subdirectory git counts, the
// subtree of each one it does not) and is trusted while all of them are
// unchanged and older than RacyWindow; otherwise git lists it again
// (dircache.go). Ignored asks one long-lived git check-ignore, which lives
// until Release ends the unit of work (ignore.go). A Stamp is the same
// lstat record for a caller that polls a set of paths for change (watch.go):
// changed when an lstat differs, or once RacyWindow has passed after a
// change the stamp was taken too soon after to trust.
//
// # Paths
//
// Paths are root-relative, slash-separated and clean. Resolve rejects
// anything else, follows symlinks one component at a time without ever
// leaving the root, and reports failures as ErrUnsafePath, ErrNotExist,
// ErrNotRegular or ErrUnreadable (a name the file system refuses, a symlink
// loop, a component that may not be read: facts about the path, not
// failures of the repository). ResolvePath also says which symlinks it
// followed, so a caller can hold every hop to its own rules. Git failures
// are *GitError.
//
// ReadFileMax and FileDigestMax bound the work one file can cost: a file
// larger than the bound is ErrTooLarge (*FileTooLarge), decided from its
// stat before anything is read.
package snapshot
