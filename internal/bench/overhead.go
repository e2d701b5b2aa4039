package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/dash"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

// Path names of the overhead bench.
const (
	Direct   = "direct"
	Bare     = "bare"
	Spillway = "spillway"
	// Fleet is spillway in a fleet (state: redis://…, OverheadOptions.State).
	Fleet = "fleet"
	// Translated is spillway answering the same Chat request from another
	// vendor's model (OverheadOptions.Translated): the request into
	// Messages, the answer back, event by event.
	Translated = "translated"
	// DirectTranslated is the translated path's baseline: its request as
	// the gateway sends it (Messages), direct to the simulator.
	DirectTranslated = "direct-messages"
	// Failover is a request whose first model answers 529 at once (its
	// breaker held closed, so every request makes the round trip) and the
	// next answers; FailoverSkip the same with the first model's breaker
	// open (a skip, no round trip). Both over direct: the answering
	// model's own time (OverheadOptions.Failover).
	Failover     = "failover"
	FailoverSkip = "failover-open"
)

// The failover paths' gateways: failClosed holds the full model's breaker
// closed, failOpen leaves the shipped breaker to open.
const (
	failClosed = "closed"
	failOpen   = "open"
	// fullModel is the simulator's model the failover paths find full
	fullModel = "gpt-6-astra"
)

// translatedModel is the gateway's model for the translated path: an
// Anthropic model (the simulator's claude-haiku-5-5) in a chain whose first
// model speaks OpenAI, so that a Chat request for it is translated.
const translatedModel = "bench-claude"

// OverheadOptions configure Overhead.
type OverheadOptions struct {
	RPS           []int         // open-loop rates (500, 1000, 2000)
	Duration      time.Duration // per path and rate, in slices (6s)
	Slice         time.Duration // the paths take turns this long (1s)
	Stream        bool          // SSE answers instead of whole JSON ones
	Conns         int           // closed-loop connections for the throughput run (32)
	ThroughputFor time.Duration // per path; 0 skips the run
	// PacingOff turns the gateway's pacing off; by default it runs the
	// shipped pacing, which paces only under pressure and so should cost
	// nothing here (pools never fill).
	PacingOff bool
	// State, a redis:// URL, adds a fourth path: a second gateway in a
	// fleet on that Redis, to measure what fleet state costs a request
	// while nothing changes (the request path should make no Redis call).
	State string
	// Failover adds the failover paths (Failover, FailoverSkip): gateways
	// of their own (pacing off, so that the full model is tried each
	// time, not passed over as crowded), the simulator's gpt-6-astra full.
	Failover bool
	// Translated adds a path: the same gateway answering the Chat request
	// from another vendor's model (translated both ways), to measure what
	// a cross-vendor step adds over a same-format one.
	Translated bool
	// Bedrock adds Bedrock's event stream (Procs and Stream only): a
	// Messages client's stream answered through the gateway by the
	// simulator's Bedrock (InvokeModelWithResponseStream, SigV4-signed by
	// the gateway's cloud transport) against the same request answered by
	// the simulator's Messages endpoint (SSE), each over its own direct
	// baseline (BedrockPath, MessagesPath).
	Bedrock bool
	// Procs runs the upstream, the bare proxy and the gateway as processes
	// of their own (this one only generates load), measures each proxy's
	// CPU per request, and then the peak RSS of each with OpenStreams
	// slow streams open at once (default 1000).
	Procs       bool
	OpenStreams int
	// PartProfile, with Procs, has the bare proxy and the gateway write
	// CPU profiles of the load slices to PartProfile+".bare" and
	// PartProfile+".spillway".
	PartProfile string
	Progress    func(format string, a ...any)
}

// PathResult is one path at one rate.
type PathResult struct {
	Name         string  `json:"name"`
	RPS          int     `json:"rps"`
	Sent         int     `json:"sent"`
	Errors       int     `json:"errors"`
	AchievedRPS  float64 `json:"achieved_rps"`
	P50US        float64 `json:"p50_us"`
	P99US        float64 `json:"p99_us"`
	TTFBP50US    float64 `json:"ttfb_p50_us"`
	AddedP50US   float64 `json:"added_p50_us"` // over direct
	AddedP99US   float64 `json:"added_p99_us"`
	AllocsPerReq float64 `json:"allocs_per_req"` // the whole process (client, path, simulator)
	// CPUPerReqUS is the proxy process's CPU time per request (Procs).
	CPUPerReqUS float64 `json:"cpu_per_req_us,omitempty"`
	BytesPerReq float64 `json:"bytes_per_req"`
}

// Throughput is a path's closed-loop rate.
type Throughput struct {
	Name  string  `json:"name"`
	Conns int     `json:"conns"`
	RPS   float64 `json:"rps"`
}

// OverheadReport is the whole run.
type OverheadReport struct {
	Stream bool `json:"stream"`
	// Pacing is the gateway's: "shipped" (pacing.when: auto, which is
	// pressure in the gateway) or "off".
	Pacing string       `json:"pacing"`
	Paths  []PathResult `json:"paths"`
	// AddedP50Ratio is spillway's added p50 over direct divided by the bare
	// proxy's, at 1000 req/s when that rate ran (else the first rate).
	AddedP50Ratio float64            `json:"added_p50_ratio"`
	RatioAtRPS    int                `json:"ratio_at_rps"`
	Ratios        map[string]float64 `json:"ratios"` // by rate
	// FleetP50Ratio and FleetP99Ratio are, by rate, the fleet gateway's
	// p50 and p99 latency divided by the local one's (with State).
	FleetP50Ratio map[string]float64 `json:"fleet_p50_ratio,omitempty"`
	FleetP99Ratio map[string]float64 `json:"fleet_p99_ratio,omitempty"`
	// TranslatedTTFBRatio is, by rate, the translated path's added time to
	// first byte over the same-format one's (both over direct), with
	// Translated.
	TranslatedTTFBRatio map[string]float64 `json:"translated_ttfb_ratio,omitempty"`
	// With Bedrock, by rate: the Bedrock path's added time to first byte
	// p50 over its direct baseline (µs), the same-format Messages SSE
	// path's over its own, and the first divided by the second.
	BedrockAddedTTFBUS  map[string]float64 `json:"bedrock_added_ttfb_p50_us,omitempty"`
	MessagesAddedTTFBUS map[string]float64 `json:"messages_added_ttfb_p50_us,omitempty"`
	BedrockTTFBRatio    map[string]float64 `json:"bedrock_ttfb_ratio,omitempty"`
	MaxThroughput       []Throughput       `json:"max_throughput,omitempty"`
	PeakRSSMB           float64            `json:"peak_rss_mb"`
	// With Procs, by rate: spillway's over the bare proxy's CPU per
	// request, added time-to-first-byte p50 and added p99; then each
	// proxy's peak RSS with OpenStreams slow streams open.
	Procs          bool               `json:"procs,omitempty"`
	CPURatio       map[string]float64 `json:"cpu_ratio,omitempty"`
	AddedTTFBRatio map[string]float64 `json:"added_ttfb_p50_ratio,omitempty"`
	AddedP99Ratio  map[string]float64 `json:"added_p99_ratio,omitempty"`
	OpenStreams    int                `json:"open_streams,omitempty"`
	BareRSSMB      float64            `json:"bare_rss_mb,omitempty"`
	SpillwayRSSMB  float64            `json:"spillway_rss_mb,omitempty"`
	CPUs           int                `json:"cpus"`
	GoVersion      string             `json:"go_version"`
}

// Overhead measures what the gateway adds to a request against a simulator
// that answers at once: direct to the simulator, through a bare
// httputil.ReverseProxy, and through spillway, taking turns in slices at
// each fixed open-loop rate so that drift hits all three alike. Latency is
// counted from when each request was due, not when it went out, so a path
// that falls behind pays for it (no coordinated omission).
func Overhead(ctx context.Context, o OverheadOptions) (*OverheadReport, error) {
	o.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Procs && o.State != "" {
		return nil, fmt.Errorf("bench: --procs and --state together are not measured yet: run them apart")
	}
	if o.Bedrock && (!o.Procs || !o.Stream) {
		return nil, fmt.Errorf("bench: --bedrock measures streams through a gateway process given AWS test credentials in its environment: add --procs and --stream")
	}
	if o.Procs && runtime.GOOS != "linux" {
		return nil, fmt.Errorf("bench: --procs reads each process's CPU and memory from /proc: Linux only")
	}
	run, cleanup, err := startOverhead(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if o.Bedrock { // the gateway loads its AWS configuration at its first Bedrock request: not in the warm-up's 300 ms
		if err := run.firstBedrock(ctx); err != nil {
			return nil, err
		}
	}
	// warm up every path's connections and code
	for _, n := range run.names {
		if _, err := closedLoop(ctx, run.senders[n], 8, 300*time.Millisecond); err != nil {
			return nil, fmt.Errorf("bench: %s path: %w", n, err)
		}
	}

	rep := &OverheadReport{Stream: o.Stream, Pacing: "shipped", Ratios: map[string]float64{}, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if o.PacingOff {
		rep.Pacing = "off"
	}
	for _, rps := range o.RPS {
		at, err := run.measure(ctx, rps, rep)
		if err != nil {
			return nil, err
		}
		rep.addRate(o, rps, at)
	}
	if o.ThroughputFor > 0 {
		for _, n := range run.names {
			rate, err := closedLoop(ctx, run.senders[n], o.Conns, o.ThroughputFor)
			if err != nil {
				return nil, err
			}
			rep.MaxThroughput = append(rep.MaxThroughput, Throughput{Name: n, Conns: o.Conns, RPS: rate})
			o.Progress("%s: %.0f req/s with %d connections", n, rate, o.Conns)
		}
	}
	rep.PeakRSSMB = vmHWM("/proc/self/status")
	if o.Procs {
		rep.Procs = true
		rep.OpenStreams = cmp.Or(o.OpenStreams, 1000)
		o.Progress("peak RSS with %d slow streams open at once", rep.OpenStreams)
		if rep.BareRSSMB, rep.SpillwayRSSMB, err = openStreamsRSS(ctx, rep.OpenStreams, o.PacingOff); err != nil {
			return nil, err
		}
	}
	return rep, ctx.Err()
}

// defaults fills in the options left zero.
func (o *OverheadOptions) defaults() {
	if len(o.RPS) == 0 {
		o.RPS = []int{500, 1000, 2000}
	}
	if o.Duration <= 0 {
		o.Duration = 6 * time.Second
	}
	if o.Slice <= 0 {
		o.Slice = time.Second
	}
	o.Slice = min(o.Slice, o.Duration)
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
}

// overheadRun is the overhead bench's paths, each by name: its URL, its
// sender (its own client, the body it sends), and (with Procs) its proxy's
// process.
type overheadRun struct {
	o       OverheadOptions
	names   []string // Direct first
	urls    map[string]string
	procs   map[string]*proc
	senders map[string]sender
}

// startOverhead starts the paths o asks for; the func stops them.
func startOverhead(ctx context.Context, o OverheadOptions) (*overheadRun, func(), error) {
	r := &overheadRun{o: o, procs: map[string]*proc{}} // the proxies' processes, with Procs
	var cleanup func()
	var err error
	if o.Procs {
		r.urls, r.procs, cleanup, err = startProcs(ctx, 0, o.PacingOff, o.PartProfile, o.Failover)
	} else {
		r.urls, cleanup, err = startPaths(ctx, o.PacingOff, o.State, o.Failover)
	}
	if err != nil {
		return nil, nil, err
	}
	if o.Failover { // the failover paths' first model: full, answering 529 at once
		if err := fullUpstream(ctx, r.urls[Direct]); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	r.names = []string{Direct, Bare, Spillway}
	if o.State != "" {
		r.names = append(r.names, Fleet)
	}
	if o.Failover {
		r.names = append(r.names, Failover, FailoverSkip)
	}
	if o.Translated {
		r.names = append(r.names, DirectTranslated, Translated)
		r.urls[Translated] = r.urls[Spillway]
		r.urls[DirectTranslated] = strings.TrimSuffix(r.urls[Direct], "/v1/chat/completions") + "/v1/messages"
		if p := r.procs[Spillway]; p != nil {
			r.procs[Translated] = p
		}
	}
	if o.Bedrock {
		r.addBedrock()
	}
	r.senders = map[string]sender{}
	for _, n := range r.names {
		c := &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}}
		r.senders[n] = sendTo(c, r.urls[n], overheadBody(n, o.Stream))
		if n == DirectBedrock {
			r.senders[n] = directBedrock(c, r.urls[n])
		}
	}
	return r, cleanup, nil
}

// overheadBody is the request body the path named n sends.
func overheadBody(n string, stream bool) string {
	model := "gpt-6-luna"
	switch n {
	case Translated:
		model = translatedModel
	case Failover, FailoverSkip:
		model = "bench-full"
	}
	switch n {
	case DirectTranslated: // what the gateway sends for the translated path and for Messages
		return messagesBody("claude-haiku-5-5", stream)
	case MessagesPath:
		return messagesBody(translatedModel, true)
	case BedrockPath:
		return messagesBody(bedrockModel, true)
	}
	if stream {
		return fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"say hi"}]}`, model)
	}
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"say hi"}]}`, model)
}

// measure sends open-loop load at rps through every path, in turns, and
// adds each path's result to rep; it returns them by path.
func (r *overheadRun) measure(ctx context.Context, rps int, rep *OverheadReport) (map[string]PathResult, error) {
	samples := map[string]*pathSamples{}
	for _, n := range r.names {
		samples[n] = &pathSamples{}
	}
	rounds := max(int(r.o.Duration/r.o.Slice), 1)
	for round := range rounds {
		for k := range r.names {
			n := r.names[(round+k)%len(r.names)] // rotate who goes first
			var cpu0 time.Duration
			if p := r.procs[n]; p != nil {
				cpu0 = p.cpu()
			}
			if err := openLoop(ctx, r.senders[n], rps, r.o.Slice, samples[n]); err != nil {
				return nil, err
			}
			if p := r.procs[n]; p != nil {
				samples[n].cpu += p.cpu() - cpu0
			}
		}
	}
	at := map[string]PathResult{}
	for _, n := range r.names {
		pr := samples[n].result(n, rps)
		base, ok := at[Direct]
		if !ok { // names start with Direct
			base = pr
		}
		pr.AddedP50US, pr.AddedP99US = pr.P50US-base.P50US, pr.P99US-base.P99US
		at[n] = pr
		rep.Paths = append(rep.Paths, pr)
	}
	return at, nil
}

// addRate adds the ratios of the paths' results at rps.
func (rep *OverheadReport) addRate(o OverheadOptions, rps int, at map[string]PathResult) {
	direct, bare, sw := at[Direct], at[Bare], at[Spillway]
	k := strconv.Itoa(rps)
	if o.Procs {
		if rep.CPURatio == nil {
			rep.CPURatio, rep.AddedTTFBRatio, rep.AddedP99Ratio = map[string]float64{}, map[string]float64{}, map[string]float64{}
		}
		if bare.CPUPerReqUS > 0 {
			rep.CPURatio[k] = sw.CPUPerReqUS / bare.CPUPerReqUS
		}
		if d := bare.TTFBP50US - direct.TTFBP50US; d > 0 {
			rep.AddedTTFBRatio[k] = (sw.TTFBP50US - direct.TTFBP50US) / d
		}
		if bare.AddedP99US > 0 {
			rep.AddedP99Ratio[k] = sw.AddedP99US / bare.AddedP99US
		}
	}
	if fl, ok := at[Fleet]; ok && sw.P50US > 0 && sw.P99US > 0 {
		if rep.FleetP50Ratio == nil {
			rep.FleetP50Ratio, rep.FleetP99Ratio = map[string]float64{}, map[string]float64{}
		}
		rep.FleetP50Ratio[k], rep.FleetP99Ratio[k] = fl.P50US/sw.P50US, fl.P99US/sw.P99US
		o.Progress("%d req/s: fleet ÷ local gateway: p50 %.3f, p99 %.3f", rps, fl.P50US/sw.P50US, fl.P99US/sw.P99US)
	}
	if tr, ok := at[Translated]; ok {
		if rep.TranslatedTTFBRatio == nil {
			rep.TranslatedTTFBRatio = map[string]float64{}
		}
		if d := sw.TTFBP50US - direct.TTFBP50US; d > 0 {
			rep.TranslatedTTFBRatio[k] = (tr.TTFBP50US - at[DirectTranslated].TTFBP50US) / d
			o.Progress("%d req/s: added TTFB p50, translated ÷ same format: %.2f", rps, rep.TranslatedTTFBRatio[k])
		}
	}
	rep.addBedrock(o, k, at)
	ratio := 0.0
	if bare.AddedP50US > 0 {
		ratio = sw.AddedP50US / bare.AddedP50US
	}
	rep.Ratios[k] = ratio
	if rep.RatioAtRPS == 0 || rps == 1000 {
		rep.RatioAtRPS, rep.AddedP50Ratio = rps, ratio
	}
	o.Progress("%d req/s: p50 direct %.0fµs, bare %.0fµs, spillway %.0fµs; added-p50 ratio %.2f", rps, direct.P50US, bare.P50US, sw.P50US, ratio)
}

// startProcs runs the upstream, the bare proxy and the gateway as
// processes of their own and returns the paths' URLs and the proxies'
// processes (by path).
func startProcs(ctx context.Context, tokenRate float64, pacingOff bool, profile string, failover bool) (map[string]string, map[string]*proc, func(), error) {
	up, err := startPart(ctx, PartUpstream, "", tokenRate, false, "")
	if err != nil {
		return nil, nil, nil, err
	}
	target := "http://" + up.addr
	prof := func(name string) string {
		if profile == "" {
			return ""
		}
		return profile + "." + name
	}
	bare, err := startPart(ctx, PartBare, target, 0, false, prof(Bare))
	if err != nil {
		up.stop()
		return nil, nil, nil, err
	}
	gw, err := startPart(ctx, PartGateway, target, 0, pacingOff, prof(Spillway))
	if err != nil {
		up.stop()
		bare.stop()
		return nil, nil, nil, err
	}
	const path = "/v1/chat/completions"
	urls := map[string]string{Direct: target + path, Bare: "http://" + bare.addr + path, Spillway: "http://" + gw.addr + path}
	procs := map[string]*proc{Bare: bare, Spillway: gw}
	stop := func() {
		for _, p := range procs {
			p.stop()
		}
		up.stop()
	}
	if failover {
		for name, kind := range map[string]string{Failover: PartFailover, FailoverSkip: PartFailoverOpen} {
			p, err := startPart(ctx, kind, target, 0, true, prof(name))
			if err != nil {
				stop()
				return nil, nil, nil, err
			}
			urls[name], procs[name] = "http://"+p.addr+path, p
		}
	}
	return urls, procs, stop, nil
}

// openStreamsRSS opens n streams at once through a fresh bare proxy and a
// fresh gateway, in front of an upstream that streams slowly (each stream
// lasts seconds), and returns each proxy's peak RSS.
func openStreamsRSS(ctx context.Context, n int, pacingOff bool) (bareMB, spillwayMB float64, err error) {
	urls, procs, cleanup, err := startProcs(ctx, 20, pacingOff, "", false) // 20 tokens a second
	if err != nil {
		return 0, 0, err
	}
	defer cleanup()
	body := `{"model":"gpt-6-luna","stream":true,"messages":[{"role":"user","content":"say hi"}]}`
	for _, name := range []string{Bare, Spillway} {
		c := &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, IdleConnTimeout: time.Minute}}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range n {
			wg.Go(func() {
				if _, _, ok := request(ctx, c, urls[name], body, time.Now()); !ok {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		c.CloseIdleConnections()
		if f := failed.Load(); f > int64(n)/100 {
			return 0, 0, fmt.Errorf("bench: %d of %d open streams through %s failed", f, n, name)
		}
	}
	return procs[Bare].peakRSS(), procs[Spillway].peakRSS(), ctx.Err()
}

// startPaths starts the simulator, the bare proxy and the gateway on
// loopback and returns each path's URL.
func startPaths(ctx context.Context, pacingOff bool, state string, failover bool) (map[string]string, func(), error) {
	simAddr, err := startUpstream(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	bareAddr, err := startBare(ctx, "http://"+simAddr)
	if err != nil {
		return nil, nil, err
	}
	gwAddr, closeGW, err := startGateway(ctx, "http://"+simAddr, pacingOff, "", "")
	if err != nil {
		return nil, nil, err
	}
	const path = "/v1/chat/completions"
	urls := map[string]string{Direct: "http://" + simAddr + path, Bare: "http://" + bareAddr + path, Spillway: "http://" + gwAddr + path}
	closers := []func(){closeGW}
	if failover {
		for name, mode := range map[string]string{Failover: failClosed, FailoverSkip: failOpen} {
			addr, closeF, err := startGateway(ctx, "http://"+simAddr, true, "", mode)
			if err != nil {
				for _, c := range closers {
					c()
				}
				return nil, nil, err
			}
			urls[name] = "http://" + addr + path
			closers = append(closers, closeF)
		}
	}
	if state != "" { // the same gateway in a fleet
		fAddr, closeFleet, err := startGateway(ctx, "http://"+simAddr, pacingOff, state, "")
		if err != nil {
			closeGW()
			return nil, nil, err
		}
		urls[Fleet] = "http://" + fAddr + path
		closers = append(closers, closeFleet)
	}
	return urls, func() {
		for _, c := range closers {
			c()
		}
	}, nil
}

// fullUpstream makes the simulator behind direct (its chat URL) answer
// fullModel with capacity at once, until it stops.
func fullUpstream(ctx context.Context, direct string) error {
	u := strings.TrimSuffix(direct, "/v1/chat/completions") + "/_sim/faults"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"model":"`+fullModel+`","fault":"capacity","count":-1}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bench: making %s full: %w", fullModel, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("bench: making %s full: HTTP %d", fullModel, resp.StatusCode)
	}
	return nil
}

// startUpstream serves the simulator with pools that never fill; tokenRate
// 0 answers at once (a slow rate makes long streams).
func startUpstream(ctx context.Context, tokenRate float64) (string, error) {
	scn, _ := sim.Builtin("calm")
	scn.Noise = 0
	for t, p := range scn.Tiers {
		p.Size, p.PeakLoad, p.QuietLoad = 1_000_000, 0, 0
		scn.Tiers[t] = p
	}
	// its Bedrock takes only requests signed with the bench's AWS test
	// credentials (the Bedrock path's)
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: tokenRate, Clouds: sim.CloudAuth{AWS: &benchAWS}})
	if err != nil {
		return "", err
	}
	return serve.Background(ctx, srv.Handler(), serve.Options{OnStop: srv.Close})
}

// startBare serves the floor: a bare reverse proxy to target (it flushes
// event streams at once by itself); full duplex, without which it drops
// streaming requests under load; and a connection pool like the gateway's
// (the default keeps two idle connections per host, and a proxy under load
// then dials for most requests); and a buffer pool, so that a copy does
// not allocate its 32 KiB buffer each time.
func startBare(ctx context.Context, target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
		ErrorLog:  log.New(io.Discard, "", 0), BufferPool: &bufferPool{}}
	return serve.Background(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}), serve.Options{})
}

// bufferPool is the bare proxy's httputil.BufferPool.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// startGateway serves spillway as users run it in front of target: events
// logged to a file, metrics on, the shipped pacing (only under pressure)
// unless it is turned off; in a fleet on state when that is set.
func startGateway(ctx context.Context, target string, pacingOff bool, state, failover string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "spillway-bench-overhead-")
	if err != nil {
		return "", nil, err
	}
	cfg := config.Default()
	p := cfg.Providers["openai"]
	p.BaseURL = target + "/v1"
	cfg.Providers["openai"] = p
	// the translated path's: a chain of an OpenAI model and an Anthropic
	// one, the Anthropic provider with a key of its own
	a := cfg.Providers["anthropic"]
	a.BaseURL, a.APIKey = target, config.Secret{Value: "sk-ant-bench"}
	cfg.Providers["anthropic"] = a
	cfg.Models["bench-openai"] = config.Model{Provider: "openai", Tier: config.Light, Upstream: "gpt-6-luna"}
	cfg.Models[translatedModel] = config.Model{Provider: "anthropic", Tier: config.Light, Upstream: "claude-haiku-5-5"}
	cfg.Chains["bench-translated"] = []string{"bench-openai", translatedModel}
	// the Bedrock path's: the same Anthropic model on the simulator's
	// Bedrock, signed with the AWS credentials of the environment
	// (benchAWSEnv, in the gateway's own process)
	cfg.Providers[bedrockProvider] = config.Provider{Type: config.Bedrock, Region: bedrockRegion, BaseURL: target}
	cfg.Models[bedrockModel] = config.Model{Provider: bedrockProvider, Tier: config.Light, Upstream: bedrockUpstream}
	if failover != "" { // the failover paths': a full model, then the one that answers
		cfg.Models["bench-full"] = config.Model{Provider: "openai", Tier: config.Heavy, Upstream: fullModel}
		cfg.Models["bench-answer"] = config.Model{Provider: "openai", Tier: config.Heavy, Upstream: "gpt-6-luna"}
		cfg.Chains["bench-failover"] = []string{"bench-full", "bench-answer"}
		cfg.Pacing = config.Pacing{MaxConcurrency: 1 << 20}
		if failover == failClosed {
			cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1<<30, 0
		}
	}
	if pacingOff {
		cfg.Pacing = config.Pacing{MaxConcurrency: 1 << 20}
	}
	ew, err := events.NewWriter(filepath.Join(dir, "events.jsonl"), 50<<20, 2)
	if err != nil {
		return "", nil, err
	}
	closers := []func(){func() { ew.Close(context.Background()) }, func() { os.RemoveAll(dir) }}
	done := func() {
		for _, c := range closers {
			c()
		}
	}
	o := gateway.Options{Config: cfg, Engine: policy.New(cfg)}
	if state != "" {
		rdb, err := fleet.Dial(state)
		if err != nil {
			done()
			return "", nil, err
		}
		closers = append([]func(){func() { rdb.Close() }}, closers...)
		if err := rdb.Ping(ctx).Err(); err != nil {
			done()
			return "", nil, fmt.Errorf("bench: state %s: %w", state, err)
		}
		node := fleet.NewNode(ctx, fleet.NewRedisStore(rdb), fmt.Sprintf("bench-%d-%s", os.Getpid(), filepath.Base(dir)), policy.RealClock{}, slog.New(slog.DiscardHandler))
		o.Engine, o.Fleet = policy.New(cfg, policy.WithFleet(node)), node
	}
	// with its dashboard, as spillway serve wires it: the records go
	// through the board to the event log
	var gw *gateway.Server
	board := dash.New(dash.Options{Engine: func() *policy.Engine { return gw.Engine() }, Counts: func() (int64, int64) { return gw.Counts() },
		Clock: o.Engine.Clock(), Events: ew, Flush: ew.Flush, EventLog: filepath.Join(dir, "events.jsonl")})
	o.Events, o.Dashboard = board, board
	gw, err = gateway.New(o)
	if err != nil {
		done()
		return "", nil, err
	}
	addr, err := serve.Background(ctx, gw.Handler(), serve.Options{})
	if err != nil {
		done()
		return "", nil, err
	}
	return addr, done, nil
}

// ratio prints m[k], or n/a where the bare proxy's figure gave no ratio
// (its added p99 can be 0 or less: the p99 of loopback runs is noisy).
func ratio(m map[string]float64, k string) string {
	if v, ok := m[k]; ok {
		return fmt.Sprintf("%.2f", v)
	}
	return "n/a"
}

// WriteText prints the report as a table.
func (r *OverheadReport) WriteText(out io.Writer) {
	kind := "whole JSON answers"
	if r.Stream {
		kind = "SSE streams"
	}
	fmt.Fprintf(out, "overhead: %s from a zero-delay simulator, open loop, paths interleaved; gateway pacing %s; %d CPUs, %s\n\n", kind, r.Pacing, r.CPUs, r.GoVersion)
	fmt.Fprintf(out, "%6s  %-15s %9s %9s %9s %11s %11s %9s %8s\n", "req/s", "path", "p50", "p99", "ttfb p50", "added p50", "added p99", "allocs/req", "errors")
	for _, p := range r.Paths {
		fmt.Fprintf(out, "%6d  %-15s %8.0fµs %8.0fµs %8.0fµs %10.0fµs %10.0fµs %9.0f %8d\n", p.RPS, p.Name, p.P50US, p.P99US, p.TTFBP50US, p.AddedP50US, p.AddedP99US, p.AllocsPerReq, p.Errors)
	}
	fmt.Fprintln(out)
	rates := make([]string, 0, len(r.Ratios))
	for k := range r.Ratios {
		rates = append(rates, k)
	}
	sort.Slice(rates, func(i, j int) bool { a, _ := strconv.Atoi(rates[i]); b, _ := strconv.Atoi(rates[j]); return a < b })
	for _, k := range rates {
		fmt.Fprintf(out, "added p50, spillway ÷ bare proxy at %s req/s: %.2f\n", k, r.Ratios[k])
	}
	for _, k := range rates {
		if v, ok := r.FleetP50Ratio[k]; ok {
			fmt.Fprintf(out, "fleet (Redis state) ÷ local gateway at %s req/s: p50 %.3f, p99 %.3f\n", k, v, r.FleetP99Ratio[k])
		}
	}
	for _, p := range r.Paths {
		switch p.Name {
		case Failover:
			fmt.Fprintf(out, "failover at %d req/s (the first model 529 at once, its breaker closed): added p50 %.0fµs, p99 %.0fµs over the answering model's direct time\n", p.RPS, p.AddedP50US, p.AddedP99US)
		case FailoverSkip:
			fmt.Fprintf(out, "failover at %d req/s (the first model's breaker open: a skip): added p50 %.0fµs, p99 %.0fµs\n", p.RPS, p.AddedP50US, p.AddedP99US)
		}
	}
	for _, k := range rates {
		if v, ok := r.TranslatedTTFBRatio[k]; ok {
			fmt.Fprintf(out, "added TTFB p50, translated (Chat → Messages → Chat) ÷ same format at %s req/s: %.2f\n", k, v)
		}
	}
	for _, k := range rates {
		if v, ok := r.BedrockAddedTTFBUS[k]; ok {
			fmt.Fprintf(out, "added TTFB p50 at %s req/s, Messages stream: Bedrock's event stream %.0fµs, the same format's SSE %.0fµs: %s×\n", k, v, r.MessagesAddedTTFBUS[k], ratio(r.BedrockTTFBRatio, k))
		}
	}
	for _, t := range r.MaxThroughput {
		fmt.Fprintf(out, "max throughput %-9s %7.0f req/s (%d connections, closed loop)\n", t.Name, t.RPS, t.Conns)
	}
	if r.Procs {
		fmt.Fprintln(out)
		for _, k := range rates {
			fmt.Fprintf(out, "separate processes at %s req/s, spillway ÷ bare proxy: CPU per request %s, added TTFB p50 %s, added p99 %s\n",
				k, ratio(r.CPURatio, k), ratio(r.AddedTTFBRatio, k), ratio(r.AddedP99Ratio, k))
		}
		fmt.Fprintf(out, "peak RSS with %d slow streams open: bare proxy %.0f MB, spillway %.0f MB (%.2f×)\n", r.OpenStreams, r.BareRSSMB, r.SpillwayRSSMB, r.SpillwayRSSMB/max(r.BareRSSMB, 1))
		fmt.Fprintln(out, "allocs/req count the load generator's process only.")
		return
	}
	fmt.Fprintf(out, "peak RSS of the bench process (client, simulator and both proxies): %.0f MB\n", r.PeakRSSMB)
	fmt.Fprintln(out, "allocs/req count the whole process; subtract direct's for what a proxy adds.")
}
