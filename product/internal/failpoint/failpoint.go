// Package failpoint kills the process at a named point of its execution, for
// crash-injection tests. A program passes named points with Hit; nothing
// happens unless Arm was called, which only a test harness does (the
// product never arms a failpoint itself). Armed with "name:N", the N-th Hit
// of that name sends the process SIGKILL: a real crash, with no deferred
// function, no flush and no cleanup run. Armed with a count file instead,
// every Hit appends its name to the file, so a harness can learn from an
// uncrashed run which points a scenario passes and how often.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	mu     sync.Mutex
	target string
	at     int
	hits   = map[string]int{}
	count  *os.File
)

// Arm arms the failpoint spec ("name:N", N from 1) and, when countFile is
// not empty, records every hit in it. An empty spec arms counting only.
func Arm(spec, countFile string) error {
	mu.Lock()
	defer mu.Unlock()
	if spec != "" {
		name, n, ok := strings.Cut(spec, ":")
		k, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || k < 1 {
			return fmt.Errorf("failpoint: malformed spec %q; want name:N", spec)
		}
		target, at = name, k
	}
	if countFile != "" {
		f, err := os.OpenFile(countFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("failpoint: %w", err)
		}
		count = f
	}
	return nil
}

// Hit passes the point name: a no-op unless armed.
func Hit(name string) {
	mu.Lock()
	defer mu.Unlock()
	if target == "" && count == nil {
		return
	}
	hits[name]++
	if count != nil {
		fmt.Fprintln(count, name)
		count.Sync()
	}
	if name == target && hits[name] == at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never go on
	}
}
