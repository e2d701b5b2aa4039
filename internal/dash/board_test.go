package dash

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) // a Tuesday

func newBoard(t *testing.T, o Options) (*Board, *policytest.Clock) {
	t.Helper()
	clk := policytest.New(t0)
	eng := policy.New(config.Default(), policy.WithClock(clk))
	o.Engine = func() *policy.Engine { return eng }
	o.Clock = clk
	if o.Location == nil {
		o.Location = time.UTC
	}
	b := New(o)
	t.Cleanup(b.Close)
	return b, clk
}

func rec(ts time.Time, model, class string) events.Record {
	r := events.Record{TS: ts, RequestID: "r-" + model, Attempt: 1, Source: "gateway", Provider: "openai", Model: model,
		RequestedModel: "gpt-6-astra", Endpoint: "/v1/chat/completions", Class: class, LatencyMS: 120}
	if class != "ok" {
		r.Status, r.Error = 503, "Our servers are currently overloaded."
	} else {
		r.Status = 200
	}
	return r
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		breaker policy.BreakerState
		down    bool
		r       Rolling
		want    string
	}{
		{"open", false, Rolling{RecentOK: 9}, "failing"},
		{"closed", true, Rolling{RecentOK: 9}, "failing"},
		{"half-open", false, Rolling{}, "probing"},
		{"closed", false, Rolling{RecentKO: 2, RecentOK: 2}, "failing"},
		{"closed", false, Rolling{RecentKO: 1, RecentOK: 5}, "degraded"},
		{"closed", false, Rolling{RecentOK: 1}, "healthy"},
		{"closed", false, Rolling{OK: 3, Failed: 3}, "idle"}, // only older than the recent span
	} {
		if got := status(tc.breaker, tc.down, tc.r); got != tc.want {
			t.Errorf("status(%s, down %v, %+v) = %s, want %s", tc.breaker, tc.down, tc.r, got, tc.want)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	for class, want := range map[string]outcome{
		// what the breaker counts against the model: its failures
		"ok": okay, "capacity": failed, "timeout": failed, "server_error": failed,
		// the request's, the key's, the account's or the network's: nothing of the model's health
		"auth": ignored, "quota": ignored, "usage_limit": ignored, "rate_limit": ignored, "model_not_found": ignored,
		"bad_request": ignored, "context_length": ignored, "content_filter": ignored, "hedge_lost": ignored,
		"network": ignored, "unknown": ignored,
	} {
		if got := outcomeOf(class); got != want {
			t.Errorf("outcomeOf(%s) = %d, want %d", class, got, want)
		}
	}
}

// The caller's own 401, an empty quota, a plan's usage window or a rate
// limit of its key says nothing of the model: it stays as it was (idle, or
// healthy beside its answers), while the failure is still listed.
func TestACallersOwnFaultNeverTurnsAModelRed(t *testing.T) {
	b, clk := newBoard(t, Options{Counts: func() (int64, int64) { return 0, 0 }})
	now := clk.Now()
	faults := map[string]string{"gpt-6-astra": "auth", "gpt-6.1-sol": "quota", "claude-opus-5-5": "usage_limit", "gemini-3-pro": "rate_limit"}
	for model, class := range faults {
		b.Observe(rec(now, model, class))
		b.Observe(rec(now, model, class))
	}
	b.Observe(rec(now, "gpt-6.1-sol", "ok"))
	st := b.State(context.Background())
	statuses := map[string]string{}
	for _, c := range st.Chains {
		for _, m := range c.Models {
			statuses[m.Name] = m.Status
		}
	}
	for model, want := range map[string]string{"gpt-6-astra": "idle", "gpt-6.1-sol": "healthy", "claude-opus-5-5": "idle", "gemini-3-pro": "idle"} {
		if statuses[model] != want {
			t.Errorf("%s after %s: %q, want %q", model, faults[model], statuses[model], want)
		}
	}
	if len(st.Failures) != 2*len(faults) {
		t.Errorf("%d failures listed, want %d", len(st.Failures), 2*len(faults))
	}
}

func TestRollingWindow(t *testing.T) {
	var r ring
	add := func(ago time.Duration, lat int64, o outcome) { r.add(t0.Add(-ago).UnixMilli(), t0.UnixMilli(), lat, o) }
	add(20*time.Minute, 5000, failed) // before the window
	add(10*time.Minute, 900, failed)  // in the window, not recent
	add(3*time.Minute, 100, okay)
	add(2*time.Minute, 300, okay)
	add(time.Minute, 200, okay)
	add(time.Minute, 1, ignored)
	got := r.rolling(t0)
	want := Rolling{OK: 3, Failed: 1, Rate: 0.75, P50MS: 200, RecentOK: 3}
	if got.OK != want.OK || got.Failed != want.Failed || got.Rate != want.Rate || got.RecentOK != 3 || got.RecentKO != 0 {
		t.Errorf("rolling = %+v, want %+v", got, want)
	}
	if got.P50MS < 176 || got.P50MS > 224 {
		t.Errorf("p50 %d ms, want 200 within 12%%", got.P50MS)
	}
	// any rate: 6,000 attempts in the last minute all count
	for i := range 6000 {
		add(time.Duration(i)*10*time.Millisecond, int64(1000+i%2), okay)
	}
	if got := r.rolling(t0); got.OK != 6003 || got.Failed != 1 {
		t.Errorf("after 6,000 more in a minute: %+v", got)
	}
	// the window moves on: 16 minutes later none of it counts
	if got := r.rolling(t0.Add(16 * time.Minute)); got.OK+got.Failed != 0 {
		t.Errorf("16 minutes later: %+v", got)
	}
	// the clock steps back an hour: what comes now counts, the slots from
	// "the future" do not
	back := t0.Add(-time.Hour)
	for range 30 {
		r.add(back.UnixMilli(), back.UnixMilli(), 10, failed)
	}
	if got := r.rolling(back); got.Failed != 30 || got.OK != 0 {
		t.Errorf("after the clock stepped back an hour: %+v, want the 30 failures since", got)
	}
	// an end before 1970 or ahead of now does not break it
	r.add(-5000, back.UnixMilli(), 10, failed)
	r.add(back.Add(time.Hour).UnixMilli(), back.UnixMilli(), 10, failed)
	if got := r.rolling(back); got.Failed != 31 {
		t.Errorf("an end ahead of now counts now: %+v", got)
	}
}

func TestLatencyBins(t *testing.T) {
	last := -1
	for ms := int64(0); ms < 1<<22; ms = ms*9/8 + 1 {
		i := binOf(ms)
		if i < last {
			t.Fatalf("binOf(%d) = %d after %d: bins must not go down", ms, i, last)
		}
		last = i
		if mid := binMid(i); float64(mid) < float64(ms)*0.88-1 || float64(mid) > float64(ms)*1.12+1 {
			t.Fatalf("binMid(binOf(%d)) = %d: more than 12%% off", ms, mid)
		}
	}
}

type fakeQueue struct {
	v   QueueView
	err error
}

func (q fakeQueue) Snapshot(context.Context) (QueueView, error) { return q.v, q.err }

func TestState(t *testing.T) {
	b, clk := newBoard(t, Options{Counts: func() (int64, int64) { return 7, 1 }})
	now := clk.Now()
	b.Observe(rec(now, "gpt-6-astra", "capacity"))
	b.Observe(rec(now, "gpt-6.1-sol", "ok"))
	b.Fallback(now, "r-1", "gpt-6-astra", "gpt-6.1-sol", "capacity")
	b.Observe(rec(now, "gpt-6-luna", "bad_request")) // the request's fault: not the model's
	gone := rec(now, "gemini-3-pro", "unknown")
	gone.CallerEnded = true // the caller hung up: not the model's either
	b.Observe(gone)
	st := b.State(context.Background())
	if st.Requests != 7 || st.Inflight != 1 || st.Fallbacks != 1 {
		t.Errorf("counts %d/%d/%d, want 7/1/1", st.Requests, st.Inflight, st.Fallbacks)
	}
	statuses := map[string]string{}
	for _, c := range st.Chains {
		for _, m := range c.Models {
			statuses[m.Name] = m.Status
		}
	}
	for model, want := range map[string]string{"gpt-6-astra": "failing", "gpt-6.1-sol": "healthy", "gpt-6-luna": "idle", "gemini-3-pro": "idle", "claude-opus-5-5": "idle"} {
		if statuses[model] != want {
			t.Errorf("%s: %q, want %q", model, statuses[model], want)
		}
	}
	if len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Summary, "shared pool is full") || st.Failures[0].Message == "" {
		t.Errorf("failures: %+v; want astra's capacity in the classifier's words, with the upstream's message", st.Failures)
	}
	kinds := ""
	for _, f := range st.Flow {
		switch f := f.(type) {
		case Attempt:
			kinds += f.Kind[:1]
		case Switch:
			kinds += f.Kind[:1]
		}
	}
	if kinds != "aafaa" {
		t.Errorf("flow kinds %q, want attempt, attempt, fallback, attempt, attempt", kinds)
	}
	var attempts int
	for _, day := range st.Heat.Cells {
		for _, c := range day {
			attempts += c.Attempts
		}
	}
	if attempts != 4 || st.Heat.Cells[1][10].Capacity != 1 || st.Heat.Fills[1][10] == "" {
		t.Errorf("heatmap: %d attempts, Tue 10:00 %+v fill %q; want 4, one capacity, coloured", attempts, st.Heat.Cells[1][10], st.Heat.Fills[1][10])
	}
	if st.Queue != nil {
		t.Errorf("queue %+v without one configured", st.Queue)
	}
}

func TestStateQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     fakeQueue
		shown bool
		err   string
	}{
		{"none made yet", fakeQueue{err: ErrNoQueue}, false, ""},
		{"counts", fakeQueue{v: QueueView{Counts: map[string]int{"running": 1}, Running: []QueueTask{{ID: 3, Name: "t"}}}}, true, ""},
		{"unreadable, without its secret", fakeQueue{err: errors.New("connect postgres://spill:hunter2hunter2@db/q: refused")}, true, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBoard(t, Options{Queue: tc.q})
			q := b.State(context.Background()).Queue
			if (q != nil) != tc.shown {
				t.Fatalf("queue %+v, shown %v", q, tc.shown)
			}
			if q == nil {
				return
			}
			if !strings.Contains(q.Error, tc.err) || strings.Contains(q.Error, "hunter2") {
				t.Errorf("error %q: want %q, and no password", q.Error, tc.err)
			}
		})
	}
}

// The heatmap starts from the event log's week before the board started
// and goes on with what is observed; a record both in the log and
// observed (the log's writer lags) counts once.
func TestHeatFromTheLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	later := rec(t0.Add(time.Second), "gpt-6-astra", "capacity")
	for _, r := range []events.Record{
		rec(t0.Add(-8*24*time.Hour), "gpt-6-astra", "capacity"), // older than a week
		rec(t0.Add(-3*24*time.Hour), "gpt-6-astra", "capacity"), // Saturday 10:00
		later, // written by the gateway after the board started
	} {
		if err := json.NewEncoder(f).Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	b, _ := newBoard(t, Options{EventLog: path})
	b.Observe(later)
	if st := b.State(context.Background()); !st.Heat.Reading { // the first page starts the read
		t.Error("the first state does not say the log is being read")
	}
	<-b.Read()
	st := b.State(context.Background())
	if st.Heat.Reading {
		t.Error("the heatmap says it is still reading the log after Read")
	}
	var attempts int
	for _, day := range st.Heat.Cells {
		for _, c := range day {
			attempts += c.Attempts
		}
	}
	if attempts != 2 || st.Heat.Cells[5][10].Capacity != 1 || st.Heat.Cells[1][10].Capacity != 1 {
		t.Errorf("heatmap: %d attempts, Sat 10:00 %+v, Tue 10:00 %+v; want 2: one from the log, one observed", attempts, st.Heat.Cells[5][10], st.Heat.Cells[1][10])
	}
}

// readFrame reads one server-sent event's name and data.
func readFrame(t *testing.T, sc *bufio.Scanner) (name, data string) {
	t.Helper()
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return "", ""
}

// A page's stream: the state first, then each attempt and switch, the
// state again each tick of the board's clock, and its end when the board
// closes.
func TestEventStream(t *testing.T) {
	b, clk := newBoard(t, Options{})
	hs := httptest.NewServer(b.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	if name, data := readFrame(t, sc); name != "state" || !strings.Contains(data, `"chains"`) {
		t.Fatalf("first frame %s %.80s; want the state", name, data)
	}
	b.Observe(rec(clk.Now(), "gpt-6-astra", "capacity"))
	if name, data := readFrame(t, sc); name != "attempt" || !strings.Contains(data, `"summary":"the model's shared pool is full`) {
		t.Fatalf("frame %s %.120s; want the failed attempt with its explanation", name, data)
	}
	b.Fallback(clk.Now(), "r-1", "gpt-6-astra", "gpt-6.1-sol", "capacity")
	if name, data := readFrame(t, sc); name != "fallback" || !strings.Contains(data, `"fallbacks":1`) {
		t.Fatalf("frame %s %s; want the fallback with the count", name, data)
	}
	if err := clk.BlockUntilDue(context.Background(), tick); err != nil {
		t.Fatal(err)
	}
	clk.Advance(tick)
	if name, data := readFrame(t, sc); name != "state" || !strings.Contains(data, `"fallbacks":1`) || !strings.Contains(data, `"heat":`) {
		t.Fatalf("frame %s %.80s; want the state after a tick, with the heatmap the attempt changed", name, data)
	}
	if err := clk.BlockUntilDue(context.Background(), tick); err != nil {
		t.Fatal(err)
	}
	clk.Advance(tick)
	if name, data := readFrame(t, sc); name != "state" || strings.Contains(data, `"heat":`) {
		t.Fatalf("frame %s; want the state without the heatmap the page has (%d bytes)", name, len(data))
	}
	b.Close()
	if name, _ := readFrame(t, sc); name != "" {
		t.Fatalf("frame %s after the board closed; want the end", name)
	}
}

func TestTooManyPages(t *testing.T) {
	b, _ := newBoard(t, Options{})
	for range maxPages {
		if p, why := b.join("127.0.0.1"); p == nil {
			t.Fatalf("a page refused below the limit: %s", why)
		}
	}
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ui/events", nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("page %d: %d, Retry-After %q; want 503 with Retry-After", maxPages+1, w.Code, w.Header().Get("Retry-After"))
	}
}

// Beyond loopback the pages' streams are capped per address: many from
// one place do not lock the others out (the total is larger); on
// loopback, one person's machine, the cap is maxPages in all.
func TestPagesPerAddressBeyondLoopback(t *testing.T) {
	b, _ := newBoard(t, Options{Exposed: func() bool { return true }})
	open := func(addr string) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/ui/events", nil)
		r.RemoteAddr = addr
		ctx, cancel := context.WithCancel(r.Context())
		cancel() // the page goes once its first frame is written
		b.Handler().ServeHTTP(w, r.WithContext(ctx))
		return w.Code
	}
	for range maxPagesPerAddress {
		if p, why := b.join("192.0.2.7"); p == nil {
			t.Fatalf("a page refused below the per-address cap: %s", why)
		}
	}
	if code := open("192.0.2.7:40001"); code != http.StatusServiceUnavailable {
		t.Fatalf("a page past %d from one address: %d, want 503", maxPagesPerAddress, code)
	}
	if code := open("192.0.2.8:40002"); code != http.StatusOK {
		t.Fatalf("a page from another address: %d, want 200", code)
	}
	for i := range maxPagesExposed {
		b.join(fmt.Sprintf("198.51.100.%d", i/maxPagesPerAddress))
	}
	if p, why := b.join("203.0.113.1"); p != nil || !strings.Contains(why, fmt.Sprint(maxPagesExposed)) {
		t.Fatalf("past %d in all: %v %q", maxPagesExposed, p != nil, why)
	}
}

func TestFiles(t *testing.T) {
	b, _ := newBoard(t, Options{})
	for _, tc := range []struct {
		path, ctype string
		code        int
		has         string
	}{
		{"/", "text/html; charset=utf-8", 200, `<script src="/ui/app.js"`},
		{"/ui/", "text/html; charset=utf-8", 200, `<svg id="heatmap"`},
		// until the first state comes, the page does not claim there were no failures
		{"/ui/", "text/html; charset=utf-8", 200, `<p id="no-failures" class="quiet">Waiting for the gateway…</p>`},
		{"/ui/app.js", "text/javascript; charset=utf-8", 200, `new EventSource("/ui/events")`},
		{"/ui/style.css", "text/css; charset=utf-8", 200, `@media (max-width: 600px)`},
		{"/ui/state", "application/json", 200, `"heat"`},
		{"/ui/nothing", "text/plain; charset=utf-8", 404, "no such page"},
	} {
		w := httptest.NewRecorder()
		b.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.code || w.Header().Get("Content-Type") != tc.ctype || !strings.Contains(w.Body.String(), tc.has) {
			t.Errorf("GET %s: %d %q, body has %q: %v", tc.path, w.Code, w.Header().Get("Content-Type"), tc.has, strings.Contains(w.Body.String(), tc.has))
		}
		if tc.code == 200 && strings.HasPrefix(tc.ctype, "text/html") && !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: no content security policy", tc.path)
		}
	}
}

// fakeWriter is an event log's writer that writes only when flushed.
type fakeWriter struct {
	t    *testing.T
	mu   sync.Mutex
	f    *os.File
	held []events.Record
}

func (w *fakeWriter) Write(r events.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = append(w.held, r)
}

func (w *fakeWriter) Flush(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.held {
		if err := json.NewEncoder(w.f).Encode(r); err != nil {
			w.t.Error(err)
		}
	}
	w.held = nil
	return nil
}

// The heatmap's read of the log meets the writer exactly: an attempt the
// writer still held when the first page opened is flushed and read, and
// those observed while the log is read count once, whether the flush
// wrote them before the files were measured or not.
func TestHeatMeetsTheWriter(t *testing.T) {
	for _, flushAfter := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := &fakeWriter{t: t, f: f}
		b, clk := newBoard(t, Options{EventLog: path, Events: w, Flush: w.Flush})
		b.Observe(rec(clk.Now(), "gpt-6-astra", "capacity")) // held by the writer
		b.State(context.Background())                        // the first page: flush, measure, read
		for i := range 20 {                                  // during the read: pending, and maybe flushed
			r := rec(clk.Now(), "gpt-6.1-sol", "ok")
			r.RequestID = fmt.Sprintf("r-%d", i)
			b.Observe(r)
		}
		<-b.Read()
		if flushAfter {
			w.Flush(context.Background())
		}
		st := b.State(context.Background())
		f.Close()
		var attempts, capacity int
		for _, day := range st.Heat.Cells {
			for _, c := range day {
				attempts += c.Attempts
				capacity += c.Capacity
			}
		}
		if attempts != 21 || capacity != 1 {
			t.Errorf("heatmap: %d attempts, %d capacity; want 21 and 1 (each attempt once)", attempts, capacity)
		}
	}
}

// What the gateway's request path pays per attempt, with no page open.
func BenchmarkObserve(b *testing.B) {
	clk := policytest.New(t0)
	eng := policy.New(config.Default(), policy.WithClock(clk))
	board := New(Options{Engine: func() *policy.Engine { return eng }, Clock: clk, Location: time.UTC})
	defer board.Close()
	ok, full := rec(t0, "gpt-6.1-sol", "ok"), rec(t0, "gpt-6-astra", "capacity")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10 == 0 {
			board.Observe(full)
		} else {
			board.Observe(ok)
		}
	}
}
