package product

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/web"
)

// Load of the runtime on loopback. The figures are b.ReportMetric's:
//
//	go test ./product -run '^$' -bench 'BenchmarkRuntime' -benchtime 4000x
//
// BenchmarkRuntimeAPI: b.N GETs of the need feed (a page of 25 of 200
// resolutions, bearer token, keep-alive) from 8 concurrent clients:
// requests/s and the p50/p99 latency. BenchmarkRuntimeSSE: b.N events to
// 16 subscribers of /api/v1/events, one of which drops its connection every
// 250 events and resumes with Last-Event-ID (so does any subscriber the
// broker drops for being slow): events/s delivered, the p99
// delay from publish to receipt, and a failure if any subscriber misses or
// repeats an event.

// benchRuntime is a runtime whose store holds n resolutions.
func benchRuntime(b *testing.B, n int) (*Runtime, string) {
	b.Helper()
	repo := MustFixtureRepo(b, "grepx", false)
	data := shortDir(b)
	e, err := Open(context.Background(), Config{DataDir: data, Repository: repo, CacheOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{locNewSearcher, locCRLF, flowCRLF, testsCRLF} {
		if _, err := e.Propose(context.Background(), []byte(p)); err != nil {
			b.Fatal(err)
		}
	}
	needs := []string{needLocateNewSearcher, needTraceCRLF, needTestsCRLF, needLocateCRLF}
	for i := range n {
		req, _ := DecodeNeedRequest([]byte(needs[i%len(needs)]))
		if _, err := e.NeedContext(context.Background(), fmt.Sprintf("bench-%d", i/3), req); err != nil {
			b.Fatal(err)
		}
	}
	e.Close()
	rt, err := startRuntime(context.Background(), runtimeConfig{DataDir: data, Ring: 4096})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Shutdown(context.Background()) })
	return rt, strings.TrimSpace(string(MustReadFile(b, filepath.Join(data, tokenFileName))))
}

// percentile returns the q-quantile of sorted durations in milliseconds.
func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}

func BenchmarkRuntimeAPI(b *testing.B) {
	rt, token := benchRuntime(b, 200)
	const clients = 8
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	url := rt.URL() + "/api/v1/needs?limit=25"
	var mu sync.Mutex
	var lat []time.Duration
	jobs := make(chan struct{}, b.N)
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			for range jobs {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Errorf("GET: %d %v", resp.StatusCode, err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
}

// sseClient follows the runtime's stream and records, per event, the
// delay since it was published (the publish time is in its data).
type sseClient struct {
	url, token string
	reconnect  int // drop the connection after this many events (0: never)
	seqs       []uint64
	delays     []time.Duration
	reconnects int
	drops      int
}

// follow reads until it has seen want events, reconnecting with
// Last-Event-ID as told; acked receives each event's sequence number.
func (c *sseClient) follow(ctx context.Context, last string, want int, acked func(uint64)) error {
	for len(c.seqs) < want {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		r := sse.NewReader(resp.Body)
		since := 0
		for len(c.seqs) < want && (c.reconnect == 0 || since < c.reconnect) {
			ev, err := r.Next()
			if err != nil {
				if ctx.Err() != nil {
					resp.Body.Close()
					return fmt.Errorf("after %d events: %w", len(c.seqs), err)
				}
				c.drops++ // the broker dropped a slow subscriber: resume, as a browser does
				break
			}
			if ev.Type == sse.ResetType {
				resp.Body.Close()
				return fmt.Errorf("reset after %d events: %s", len(c.seqs), ev.Data)
			}
			var data struct {
				Seq uint64 `json:"seq"`
				At  int64  `json:"at"`
			}
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				resp.Body.Close()
				return err
			}
			c.seqs = append(c.seqs, data.Seq)
			c.delays = append(c.delays, time.Since(time.Unix(0, data.At)))
			last = ev.ID
			since++
			acked(data.Seq)
		}
		resp.Body.Close()
		if len(c.seqs) < want {
			c.reconnects++
		}
	}
	return nil
}

func BenchmarkRuntimeSSE(b *testing.B) {
	rt, token := benchRuntime(b, 0)
	const subscribers, window = 16, 200
	clients := make([]*sseClient, subscribers)
	for i := range clients {
		clients[i] = &sseClient{url: rt.URL() + "/api/v1/events", token: token}
	}
	clients[0].reconnect = 250
	// Flow control: the publisher stays at most window events ahead of the
	// slowest subscriber, well inside the resume ring.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	acked := make([]uint64, subscribers)
	slowest := func() uint64 {
		m := acked[0]
		for _, a := range acked[1:] {
			m = min(m, a)
		}
		return m
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := rt.broker.LastID()
	errs := make(chan error, subscribers)
	b.ResetTimer()
	t0 := time.Now()
	for i, c := range clients {
		go func() {
			errs <- c.follow(ctx, start, b.N, func(seq uint64) {
				mu.Lock()
				acked[i] = seq
				cond.Broadcast()
				mu.Unlock()
			})
		}()
	}
	for seq := uint64(1); seq <= uint64(b.N); seq++ {
		mu.Lock()
		for seq > slowest()+window {
			cond.Wait()
		}
		mu.Unlock()
		data := `{"seq":` + strconv.FormatUint(seq, 10) + `,"at":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}`
		if _, err := rt.broker.Publish(web.EventResolution, []byte(data)); err != nil {
			b.Fatal(err)
		}
	}
	for range clients {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	var delays []time.Duration
	for i, c := range clients {
		for j, s := range c.seqs {
			if s != uint64(j+1) {
				b.Fatalf("subscriber %d: event %d has seq %d: lost or repeated", i, j+1, s)
			}
		}
		delays = append(delays, c.delays...)
	}
	slices.Sort(delays)
	b.ReportMetric(float64(b.N*subscribers)/elapsed.Seconds(), "events/s")
	b.ReportMetric(percentile(delays, 0.99), "p99-delay-ms")
	reconnects := 0
	for _, c := range clients {
		reconnects += c.reconnects
	}
	b.ReportMetric(float64(reconnects), "reconnects")
}
