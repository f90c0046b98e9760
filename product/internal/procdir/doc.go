// Package procdir names a running process for the life of the machine (its
// pid and start time: ID, Self, Alive) and keeps private directories owned
// by one: Make creates a directory whose name records its owner, Sweep
// removes those whose owner is gone. Checkouts (product/internal/checkout)
// record their owner the same way in a marker file, and the profile lock
// (product/internal/runlock) in its holder record: this is the one liveness
// check they all share.
//
// A pid alone does not name a process: in a container every run of a
// program may get the same small pid, so what a crashed run left would look
// owned forever, and a bare kill(pid, 0) cannot tell. Alive compares the
// start time too, and whenever the answer is uncertain says alive: a wrong
// "dead" deletes what a live process is using, a wrong "alive" only leaks a
// directory until a later sweep.
package procdir
