// Command devserve is a development harness, not product code: it serves
// the embedded UI over an in-memory fake of the /api/v1 contract, composed
// from the runtime's leaves (profile lock, token and guard, SSE broker, IPC
// socket) as `needle serve` will be, so the UI can be driven in a real
// browser before the engine's handlers exist.
//
//	go run ./product/web/internal/devserve -data-dir /tmp/needle-dev [-addr 127.0.0.1:0] [-tick 5s]
//
// It prints the one-time login URL; -tick adds a resolution every interval
// so the feed moves.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/web"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (lock, token, socket)")
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	tick := flag.Duration("tick", 0, "add a resolution every interval (0: never)")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "devserve: -data-dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lg := log.New(os.Stderr, "devserve: ", log.LstdFlags)
	s, err := start(ctx, options{dataDir: *dataDir, addr: *addr, log: lg})
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserve:", err)
		os.Exit(1)
	}
	s.api.seed(time.Now())
	fmt.Printf("serving %s\nlog in: %s\n", s.url, s.guard.LoginURL())
	if *tick > 0 {
		go func() {
			t := time.NewTicker(*tick)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					s.api.AddResolution(web.ResolutionSummary{NeedID: digest("tick", fmt.Sprint(i)), Route: "locate.implementation", Subject: web.Subject{Kind: "symbol", Name: "Tick"}, Kind: "exact_hit", Hit: true, TokensSaved: 6000, LatencyMS: 4})
				}
			}
		}()
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "devserve:", err)
		os.Exit(1)
	}
}
