//go:build !unix

package runlock

import (
	"errors"
	"os"
)

// tryLock has no portable flock; refusing is the safe answer. Needle runs
// on linux.
func tryLock(f *os.File) (bool, error) {
	return false, errors.New("profile locks need flock (unix)")
}
