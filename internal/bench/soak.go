package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/words"
	"github.com/spillway/spillway/sim"
)

// The soak: the gateway as a process of its own (`spillway serve`, as users
// run it) in front of a simulator that cycles through mixed faults, under a
// steady open-loop mix of streams and whole answers in every wire format,
// with scripted tool turns. It watches the gateway's live heap, goroutines
// and open files at quiet moments (and shows its RSS), and at the end checks every request got an
// answer or a clean error, and the event log against the simulator's own
// count of what it received.

// SoakOptions configure Soak.
type SoakOptions struct {
	Duration time.Duration // the load's length (30m for the record; the suite's smoke is seconds)
	RPS      float64       // open-loop starts per second (default 20)
	// Sample is how often the gateway is sampled (default a minute, or a
	// twelfth of the run when that is shorter).
	Sample time.Duration
	// FaultEvery is how often the next fault of the cycle is injected
	// (default 10 s, or a twelfth of the run when that is shorter).
	FaultEvery time.Duration
	// Serve is the command that runs the gateway, given --config, --listen
	// and --events after it (default: this executable's `serve`).
	Serve    []string
	Dir      string // the gateway's config and event log (default a temporary directory)
	Progress func(format string, a ...any)
}

// SoakSample is one look at the gateway.
type SoakSample struct {
	AtS   float64 `json:"at_s"`
	RSSMB float64 `json:"rss_mb"`
	// HeapMB is the live heap the gateway's last collection found
	// (go_gc_heap_live_bytes): what it holds, where RSS keeps its
	// high-water mark and the heap's size follows the collector's target.
	HeapMB     float64 `json:"heap_live_mb"`
	Goroutines int     `json:"goroutines"`
	OpenFDs    int     `json:"open_fds"`
	// Quiet: taken with nothing in flight (the load paused until the
	// gateway had no request open) once the gateway had given its memory
	// back (its collector ran with nothing in flight: the live heap is
	// what it holds at rest); only quiet samples judge growth.
	Quiet bool `json:"quiet"`
}

// SoakKind counts one kind of request's outcomes.
type SoakKind struct {
	Sent     int `json:"sent"`
	Answered int `json:"answered"`
	GaveUp   int `json:"gave_up"` // a clean error: the protocol's error shape
	Broken   int `json:"broken"`  // neither an answer nor a clean error
}

// SoakReport is the soak's account.
type SoakReport struct {
	DurationS float64             `json:"duration_s"`
	RPS       float64             `json:"rps"`
	Requests  int                 `json:"requests"`
	Answered  int                 `json:"answered"`
	GaveUp    int                 `json:"gave_up"`
	Broken    int                 `json:"broken"`
	ToolTurns int                 `json:"tool_turns"` // tool results sent back and answered
	Kinds     map[string]SoakKind `json:"kinds"`
	Faults    map[string]int      `json:"faults"` // injected, by kind
	Samples   []SoakSample        `json:"samples"`
	// HeapGrowth, GoroutineGrowth and FDGrowth are the growth of the live
	// heap, goroutines and open files over the last two thirds of the
	// run: the least-squares trend through the quiet samples taken from
	// its first third on, at the end over at the first third (0.05: 5%).
	// RSS is not judged: it keeps the process's high-water mark.
	HeapGrowth      float64 `json:"heap_growth"`
	GoroutineGrowth float64 `json:"goroutine_growth"`
	FDGrowth        float64 `json:"open_files_growth"`
	// GrowthJudged: there were quiet samples enough (3); else NotJudged
	// says why not.
	GrowthJudged bool   `json:"growth_judged"`
	NotJudged    string `json:"not_judged,omitempty"`
	// Dropped is spillway_events_dropped_total at the end.
	Dropped float64 `json:"dropped_records"`
	// Records are the event records by model, Received what the simulator
	// counted by model; Doubled the records of an attempt already seen.
	Records  map[string]int `json:"records"`
	Received map[string]int `json:"received"`
	Doubled  int            `json:"doubled"`
	Examples []string       `json:"broken_examples,omitempty"`
	Failures []string       `json:"failures"`
	Pass     bool           `json:"pass"`
}

// soakFault is one step of the fault cycle.
type soakFault struct {
	name   string
	faults []sim.Fault
}

// soakCycle is what the simulator does to the gateway, one step every
// FaultEvery: capacity waves, rate limits, stalls, cuts, malformed frames,
// a provider down and back. waves lasts a step (in seconds).
func soakCycle(wave float64) []soakFault {
	all := func(kind string, models ...string) []sim.Fault {
		var out []sim.Fault
		for _, m := range models {
			out = append(out, sim.Fault{Model: m, Kind: kind, Count: -1, Seconds: wave})
		}
		return out
	}
	return []soakFault{
		{"capacity wave", all("capacity", "gpt-6-astra", "claude-opus-5-5", "gemini-3-pro")},
		{"rate limit", []sim.Fault{{Model: "gpt-6-astra", Kind: "rate_limit", Count: 3}, {Model: "claude-opus-5-5", Kind: "rate_limit", Count: 3}}},
		{"stall", []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", Count: 2}, {Model: "gemini-3-pro", Kind: "stall", Count: 2}}},
		{"cut", []sim.Fault{{Model: "gpt-6-astra", Kind: "midstream", Count: 3}, {Model: "claude-opus-5-5", Kind: "reset", Count: 2}}},
		{"malformed frame", []sim.Fault{{Model: "gpt-6-astra", Kind: "malformed", Count: 2}, {Model: "gemini-3-pro", Kind: "malformed", Count: 2}}},
		{"capacity wave (in the stream)", []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Style: "event", Count: -1, Seconds: wave}}},
		{"provider down", all("reset", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5")},
	}
}

// soakTool is the tool every Messages request of the soak declares; the
// simulator's script calls it, and the second request brings its result.
const soakTool = `{"name":"lookup","description":"Look a word up.","input_schema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`

// soakKinds are the requests of the mix, one start each in turn.
var soakKinds = []string{"chat-stream", "chat", "responses-stream", "messages-tools-stream", "messages-tools", "gemini-stream", "gemini"}

// Soak runs the soak and judges it; the error is for a soak that could
// not run (the gateway did not start), a failed judgement is in the report.
func Soak(ctx context.Context, o SoakOptions) (*SoakReport, error) {
	cleanup, err := o.defaults()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	up, err := startSoakUpstream()
	if err != nil {
		return nil, err
	}
	defer up.close()
	gw, err := startSoakGateway(ctx, o, up.addr)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	o.Progress("gateway pid %d on %s, simulator on %s; %s at %g req/s", gw.cmd.Process.Pid, gw.addr, up.addr, o.Duration, o.RPS)

	rep := &SoakReport{RPS: o.RPS, Kinds: map[string]SoakKind{}, Faults: map[string]int{}}
	l := &soakLoad{base: "http://" + gw.addr, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}, rep: rep, upstream: up.http, giveBack: soakGiveBack(o.Sample)}
	start := time.Now()
	end := start.Add(o.Duration)
	faultsDone := l.faults(ctx, up.sim, o.FaultEvery, end)
	if err := l.run(ctx, gw, o, start, end); err != nil {
		return nil, err
	}
	<-faultsDone
	l.wg.Wait()
	up.sim.ClearFaults("")
	rep.Samples = append(rep.Samples, l.sample(ctx, gw, start, 30*time.Second))
	rep.DurationS = time.Since(start).Seconds()
	rep.Dropped = gw.metric(ctx, "spillway_events_dropped_total")

	// the records, once the gateway has written them all (it flushes its
	// log as it stops)
	gw.stop()
	rep.Records, rep.Doubled, err = soakRecords(filepath.Join(o.Dir, "events"))
	if err != nil {
		return nil, err
	}
	rep.Received = map[string]int{}
	for m, st := range up.sim.Snapshot().Models {
		if st.Received > 0 {
			rep.Received[m] = st.Received
		}
	}
	rep.judge()
	return rep, nil
}

// defaults checks the options and fills in those left zero; the func
// removes the directory it made for Dir.
func (o *SoakOptions) defaults() (func(), error) {
	if o.Duration <= 0 {
		return nil, errors.New("bench soak: --duration must be positive")
	}
	if o.RPS <= 0 {
		o.RPS = 20
	}
	if o.Sample <= 0 {
		o.Sample = min(time.Minute, o.Duration/12)
	}
	if o.FaultEvery <= 0 {
		o.FaultEvery = min(10*time.Second, o.Duration/12)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if len(o.Serve) == 0 {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Serve = []string{self, "serve"}
	}
	if o.Dir != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("", "spillway-soak-")
	if err != nil {
		return nil, err
	}
	o.Dir = d
	return func() { os.RemoveAll(d) }, nil
}

// soakUpstream is the soak's simulator, on its own http.Server.
type soakUpstream struct {
	sim  *sim.Server
	http *http.Server
	addr string
}

// startSoakUpstream starts the simulator (its Claude models call a tool,
// then answer with its result).
func startSoakUpstream() (*soakUpstream, error) {
	scn, _ := sim.Builtin("calm")
	srv, err := sim.New(sim.Options{Scenario: scn, TokenRate: 400})
	if err != nil {
		return nil, err
	}
	// the simulator's own http.Server (not serve.Background's): a sample
	// closes its idle connections, so that the gateway's pool of idle
	// upstream connections (two goroutines and a file each, kept 90 s)
	// is not counted as the gateway's own
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	up := &soakUpstream{sim: srv, http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String()}
	go func() { _ = up.http.Serve(ln) }()
	for _, m := range []string{"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} {
		if err := srv.AddScript(sim.Script{Model: m, Count: -1, Turns: []sim.ScriptTurn{
			{Call: sim.ScriptCalls{{Tool: "lookup", Arguments: map[string]any{"q": "spill"}}}},
			{Text: "looked up: {result}"},
		}}); err != nil {
			up.close()
			return nil, err
		}
	}
	return up, nil
}

func (u *soakUpstream) close() {
	u.http.Close()
	u.sim.Close()
}

// faults runs the fault cycle on srv, a step every interval, until end
// (or ctx ends); the channel closes when it stops.
func (l *soakLoad) faults(ctx context.Context, srv *sim.Server, every time.Duration, end time.Time) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cycle := soakCycle(every.Seconds() * 0.8)
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !time.Now().Before(end) {
				return
			}
			step := cycle[i%len(cycle)]
			for _, f := range step.faults {
				if err := srv.AddFault(f); err == nil {
					l.mu.Lock()
					l.rep.Faults[step.name]++
					l.mu.Unlock()
				}
			}
		}
	}()
	return done
}

// run starts conversations at o.RPS until end, sampling the gateway every
// o.Sample. The load pauses for each sample until the gateway is idle: at
// most as long as its longest request can take (its wait budget and a last
// try's request timeout), a quarter of the sampling interval, and not under
// 2 s (a sample that finds requests still open is taken anyway, and judges
// no growth).
func (l *soakLoad) run(ctx context.Context, gw *soakGateway, o SoakOptions, start, end time.Time) error {
	quietWait := min(soakBudget+soakRequest+time.Second, max(2*time.Second, o.Sample/4))
	sample := time.NewTimer(o.Sample)
	defer sample.Stop()
	gap := time.Duration(float64(time.Second) / o.RPS)
	next := time.Now()
	for n := 0; time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sample.C:
			l.rep.Samples = append(l.rep.Samples, l.sample(ctx, gw, start, quietWait))
			next = time.Now()
			sample.Reset(o.Sample)
		case <-time.After(time.Until(next)):
			l.start(ctx, soakKinds[n%len(soakKinds)])
			n++
			next = next.Add(gap)
		}
	}
	return nil
}

// soakGateway is the gateway's process.
type soakGateway struct {
	cmd  *exec.Cmd
	addr string
	once sync.Once
	http *http.Client
}

// The soak gateway's request timeout and wait budget: its longest request
// takes about their sum.
const (
	soakRequest = 5 * time.Second
	soakBudget  = 10 * time.Second
)

// soakGiveBack is the gateway's --give-back-after: a quiet sample waits
// for it, so that the collector has run with nothing in flight. A second,
// or a tenth of the sampling interval when that is shorter (the smoke's
// samples are seconds apart).
func soakGiveBack(sample time.Duration) time.Duration { return min(time.Second, sample/10) }

// startSoakGateway writes the gateway's configuration (the defaults, the
// providers at the simulator, short watchdogs so that a stall costs
// seconds) and runs it.
func startSoakGateway(ctx context.Context, o SoakOptions, simAddr string) (*soakGateway, error) {
	cfg := filepath.Join(o.Dir, "spillway.yaml")
	body := fmt.Sprintf(`providers:
  openai: { base_url: "http://%[1]s/v1" }
  anthropic: { base_url: "http://%[1]s" }
  gemini: { base_url: "http://%[1]s" }
timeouts: { header: 2s, request: %[2]s, first_token: 2s, idle: 2s }
retry: { budget: %[3]s }
`, simAddr, soakRequest, soakBudget)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "events"), 0o700); err != nil {
		return nil, err
	}
	args := append(slices.Clone(o.Serve[1:]), "--config", cfg, "--listen", "127.0.0.1:0", "--events", filepath.Join(o.Dir, "events", "events.jsonl"),
		"--give-back-after", soakGiveBack(o.Sample).String())
	cmd := exec.CommandContext(ctx, o.Serve[0], args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.SysProcAttr = partAttr()
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+o.Dir, "XDG_STATE_HOME="+o.Dir, "XDG_CONFIG_HOME="+o.Dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(stderr)
	var seen strings.Builder
	for {
		line, err := rd.ReadString('\n')
		seen.WriteString(line)
		if m := bannerRe.FindStringSubmatch(line); m != nil {
			go io.Copy(io.Discard, rd)
			return &soakGateway{cmd: cmd, addr: m[1], http: &http.Client{Timeout: 5 * time.Second}}, nil
		}
		if err != nil || seen.Len() > 64<<10 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("bench soak: the gateway did not start: %s", strings.TrimSpace(seen.String()))
		}
	}
}

var bannerRe = regexp.MustCompile(`listening on http://(\S+)`)

func (g *soakGateway) stop() {
	g.once.Do(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		_ = g.cmd.Wait()
	})
}

// metrics reads the gateway's /metrics: each series without labels.
func (g *soakGateway) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.ContainsRune(name, '{') {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

func (g *soakGateway) metric(ctx context.Context, name string) float64 {
	m, _ := g.metrics(ctx)
	return m[name]
}

// soakRecords counts the event records in dir by model, and the records
// of an attempt (request id, attempt number) seen before.
func soakRecords(dir string) (map[string]int, int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl*"))
	if err != nil {
		return nil, 0, err
	}
	by := map[string]int{}
	seen := map[string]bool{}
	doubled := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var r events.Record
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Gap != nil {
				continue // a gap line says records lost: Dropped counts them
			}
			k := r.RequestID + "#" + strconv.Itoa(r.Attempt)
			if seen[k] {
				doubled++
				continue
			}
			seen[k] = true
			by[r.Model]++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, 0, err
		}
	}
	return by, doubled, nil
}

// judge fills in the growth figures and the failures.
func (r *SoakReport) judge() {
	fail := func(format string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, a...)) }
	if r.Requests == 0 {
		fail("no request was sent")
	}
	if r.Broken > 0 {
		fail("%d of %d requests got neither an answer nor a clean error (%s)", r.Broken, r.Requests, strings.Join(r.Examples, "; "))
	}
	if r.Dropped != 0 {
		fail("the gateway dropped %g event records", r.Dropped)
	}
	if r.Doubled > 0 {
		fail("%s two records", words.Count(r.Doubled, "attempt")+words.Plural(r.Doubled, " has", " have"))
	}
	models := map[string]bool{}
	for m := range r.Records {
		models[m] = true
	}
	for m := range r.Received {
		models[m] = true
	}
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for m := range models {
			if !yield(m) {
				return
			}
		}
	}) {
		if r.Records[m] != r.Received[m] {
			fail("%s: %d event records for %d requests the simulator received", m, r.Records[m], r.Received[m])
		}
	}
	// the trend over the last two thirds: a least-squares line through
	// the quiet samples taken from the first third on, its value at the
	// end over its value at the first third. A leak is a slope; the live
	// heap's swings with what the last collection found in flight are not,
	// and RSS (the process's high-water mark) is not judged.
	var quiet, late []SoakSample
	d := r.DurationS
	for _, s := range r.Samples {
		if s.Quiet {
			quiet = append(quiet, s)
			if s.AtS >= d/3 {
				late = append(late, s)
			}
		}
	}
	if len(late) < 3 {
		r.NotJudged = fmt.Sprintf("growth not judged: %d of %d samples were taken with nothing in flight, %d of them in the last two thirds, and it takes 3 there (run longer, or sample more often)", len(quiet), len(r.Samples), len(late))
		r.Pass = len(r.Failures) == 0
		return
	}
	r.GrowthJudged = true
	for _, g := range []struct {
		what, unit string
		y          func(SoakSample) float64
		growth     *float64
	}{
		{"the live heap", "MB", func(s SoakSample) float64 { return s.HeapMB }, &r.HeapGrowth},
		{"goroutines", "", func(s SoakSample) float64 { return float64(s.Goroutines) }, &r.GoroutineGrowth},
		{"open files", "", func(s SoakSample) float64 { return float64(s.OpenFDs) }, &r.FDGrowth},
	} {
		from, to := soakTrend(late, d, g.y)
		if from > 0 {
			*g.growth = to/from - 1
		}
		if *g.growth > 0.10 {
			fail("%s grew %.0f%% over the last two thirds (the trend through %d quiet samples: %.1f%s at the first third, %.1f%s at the end)",
				g.what, 100**g.growth, len(late), from, g.unit, to, g.unit)
		}
	}
	r.Pass = len(r.Failures) == 0
}

// soakTrend is the least-squares line through y of samples, at the first
// third of a run of d seconds and at its end.
func soakTrend(samples []SoakSample, d float64, y func(SoakSample) float64) (from, to float64) {
	var mx, my float64
	for _, s := range samples {
		mx, my = mx+s.AtS, my+y(s)
	}
	n := float64(len(samples))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for _, s := range samples {
		sxy += (s.AtS - mx) * (y(s) - my)
		sxx += (s.AtS - mx) * (s.AtS - mx)
	}
	b := 0.0
	if sxx > 0 {
		b = sxy / sxx
	}
	return my + b*(d/3-mx), my + b*(d-mx)
}

// WriteText prints the soak's account.
func (r *SoakReport) WriteText(out io.Writer) {
	fmt.Fprintf(out, "soak: %.0f s at %g req/s, the gateway as its own process, mixed faults\n", r.DurationS, r.RPS)
	fmt.Fprintf(out, "requests %d: answered %d, given up with a clean error %d, neither %d; tool results sent back and answered %d\n",
		r.Requests, r.Answered, r.GaveUp, r.Broken, r.ToolTurns)
	for _, k := range soakKinds {
		if c, ok := r.Kinds[k]; ok {
			fmt.Fprintf(out, "  %-22s %6d sent  %6d answered  %5d given up  %d neither\n", k, c.Sent, c.Answered, c.GaveUp, c.Broken)
		}
	}
	var fs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Faults {
			if !yield(k) {
				return
			}
		}
	}) {
		fs = append(fs, fmt.Sprintf("%s %d", k, r.Faults[k]))
	}
	fmt.Fprintf(out, "faults injected: %s\n", strings.Join(fs, ", "))
	recs, recv := 0, 0
	for _, n := range r.Records {
		recs += n
	}
	for _, n := range r.Received {
		recv += n
	}
	fmt.Fprintf(out, "event records %d for %d requests the simulator received; %d doubled; %g dropped\n", recs, recv, r.Doubled, r.Dropped)
	fmt.Fprintln(out, "  at (s)  live heap (MB)  RSS (MB)  goroutines  open files")
	for _, s := range r.Samples {
		q := ""
		if !s.Quiet {
			q = "  (not quiet: left out of the growth)"
		}
		fmt.Fprintf(out, "  %6.0f  %14.1f  %8.1f  %10d  %10d%s\n", s.AtS, s.HeapMB, s.RSSMB, s.Goroutines, s.OpenFDs, q)
	}
	if r.GrowthJudged {
		fmt.Fprintf(out, "growth over the last two thirds: live heap %+.1f%%, goroutines %+.1f%%, open files %+.1f%% (fails over +10%%; RSS, which keeps its high-water mark, is shown, not judged)\n",
			100*r.HeapGrowth, 100*r.GoroutineGrowth, 100*r.FDGrowth)
	} else {
		fmt.Fprintln(out, r.NotJudged)
	}
	if r.Pass {
		fmt.Fprintln(out, "PASS")
		return
	}
	for _, f := range r.Failures {
		fmt.Fprintln(out, "FAIL: "+f)
	}
}
