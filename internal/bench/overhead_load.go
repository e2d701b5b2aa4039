package bench

// The overhead bench's load: open-loop requests at a fixed rate, a
// closed-loop throughput run, and the samples they gather.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pathSamples gathers one path's measurements over its slices.
type pathSamples struct {
	mu      sync.Mutex
	lat     []time.Duration
	ttfb    []time.Duration
	sent    int
	errors  int
	active  time.Duration
	mallocs uint64
	bytes   uint64
	cpu     time.Duration // the path's proxy process's (Procs)
}

func (s *pathSamples) add(lat, ttfb time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if !ok {
		s.errors++
		return
	}
	s.lat = append(s.lat, lat)
	s.ttfb = append(s.ttfb, ttfb)
}

func (s *pathSamples) result(name string, rps int) PathResult {
	r := PathResult{Name: name, RPS: rps, Sent: s.sent, Errors: s.errors}
	if s.active > 0 {
		r.AchievedRPS = float64(len(s.lat)) / s.active.Seconds()
	}
	if s.sent > 0 {
		r.CPUPerReqUS = float64(s.cpu) / float64(time.Microsecond) / float64(s.sent)
		r.AllocsPerReq = float64(s.mallocs) / float64(s.sent)
		r.BytesPerReq = float64(s.bytes) / float64(s.sent)
	}
	r.P50US, r.P99US = usQuantile(s.lat, 0.50), usQuantile(s.lat, 0.99)
	r.TTFBP50US = usQuantile(s.ttfb, 0.50)
	return r
}

func usQuantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(int(q*float64(len(s))), len(s)-1)]) / float64(time.Microsecond)
}

// sender sends one request of a path, due at due, and reads its whole
// answer: the latency runs from due to the last byte, the time to first
// byte from due to the answer's first byte (request, and directBedrock's
// first event).
type sender func(ctx context.Context, due time.Time) (lat, ttfb time.Duration, ok bool)

// sendTo is the sender of body to u with c (request).
func sendTo(c *http.Client, u, body string) sender {
	return func(ctx context.Context, due time.Time) (time.Duration, time.Duration, bool) {
		return request(ctx, c, u, body, due)
	}
}

// openLoop sends requests at a fixed rate for d, each on its own goroutine
// at its due time whether or not earlier ones are done, and waits for the
// last to finish. The allocations of the slice are counted to the path.
func openLoop(ctx context.Context, send sender, rps int, d time.Duration, s *pathSamples) error {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	interval := time.Second / time.Duration(rps)
	n := int(d / interval)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			if !sleep(ctx, w) {
				break
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, ttfb, ok := send(ctx, due)
			s.add(lat, ttfb, ok)
		}()
	}
	wg.Wait()
	s.active += time.Since(start)
	runtime.ReadMemStats(&after)
	s.mallocs += after.Mallocs - before.Mallocs
	s.bytes += after.TotalAlloc - before.TotalAlloc
	return ctx.Err()
}

// request sends one request and reads the whole answer; the latency runs
// from due to the last byte, the time to first byte from due to the
// response's first byte.
func request(ctx context.Context, c *http.Client, u, body string, due time.Time) (lat, ttfb time.Duration, ok bool) {
	var first time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchKey)
	if strings.HasSuffix(u, "/v1/messages") { // the translated path's baseline: Messages, direct
		req.Header.Set("X-Api-Key", benchKey)
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, false
	}
	_, err = io.Copy(io.Discard, bufio.NewReader(resp.Body))
	resp.Body.Close()
	end := time.Now()
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, 0, false
	}
	return end.Sub(due), first.Sub(due), true
}

// closedLoop runs conns workers back to back for d and returns the rate of
// good answers.
func closedLoop(ctx context.Context, send sender, conns int, d time.Duration) (float64, error) {
	var good, bad atomic.Int64
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				if _, _, ok := send(cctx, time.Now()); ok {
					good.Add(1)
				} else if cctx.Err() == nil {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if good.Load() == 0 {
		return 0, fmt.Errorf("no request succeeded (%d failed)", bad.Load())
	}
	return float64(good.Load()) / time.Since(start).Seconds(), ctx.Err()
}
