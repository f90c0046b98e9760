package snapshot

import (
	"context"
	"runtime"
	"sync"
)

// ForEach calls fn(i) for every i in 0..n-1, on one goroutine per CPU, and
// returns once every call has returned. When ctx ends it starts no more
// calls and returns ctx.Err(). Snapshots and checkouts hash their files
// with it.
func ForEach(ctx context.Context, n int, fn func(i int)) error {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	err := feed(ctx, next, n)
	wg.Wait()
	return err
}

// feed sends 0..n-1 on next and closes it, stopping early when ctx ends.
func feed(ctx context.Context, next chan<- int, n int) error {
	defer close(next)
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
