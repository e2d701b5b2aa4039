package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/serve"
)

// DefaultMaxBody is the request body limit; larger bodies get 413.
const DefaultMaxBody = 32 << 20

// Options configure a Server.
type Options struct {
	Scenario *Scenario
	// Config supplies the models (with provider and tier) the simulator
	// serves; config.Default() when nil.
	Config *config.Config
	Seed   int64
	Clock  Clock // RealClock, or the scenario's start at real speed, when nil
	// TokenRate, when not negative, overrides the scenario's streaming rate.
	TokenRate float64
	MaxBody   int64
	Logger    *slog.Logger
	// Regions serve every model again under a path prefix each (/eu/v1/…,
	// /eu/_sim/faults), with pools, faults and statistics of their own: one
	// model as several deployments, as a provider's regions are. Each
	// region runs the same scenario (its peaks and outages too, and what
	// the scenario's regions change for it) with load noise of its own.
	Regions []string
	// Clouds are the credentials the Bedrock and Vertex AI endpoints
	// accept (any when zero).
	Clouds CloudAuth

	auth   *cloudAuth // the root's, shared by its regions
	region string     // the region's name, for a region's server
}

type modelInfo struct {
	name     string
	provider string // wire format: openai, anthropic, gemini
	tier     string
	context  int
}

// Server is the simulated provider.
type Server struct {
	scn       *Scenario
	seed      int64
	clock     Clock
	start     time.Time
	tokenRate float64
	maxBody   int64
	log       *slog.Logger
	models    map[string]modelInfo

	mu    sync.Mutex
	stats map[string]*ModelStats
	// changed is closed, and replaced, whenever stats change: WaitStats
	// waits on it
	changed chan struct{}
	rates   map[string]*rateWindow
	faults  []*Fault
	// scripts by model ("*": every model), see Script
	scripts map[string]*Script
	rng     *rand.Rand
	seq     uint64

	done chan struct{} // closed by Close: stalled handlers give up
	once sync.Once

	regions map[string]*Server
	auth    *cloudAuth
	region  string // the region this server is, "" for the root
}

// New builds a Server.
func New(o Options) (*Server, error) {
	scn := o.Scenario
	if scn == nil {
		scn, _ = Builtin("calm")
	}
	if err := scn.Validate(); err != nil {
		return nil, err
	}
	cfg := o.Config
	if cfg == nil {
		cfg = config.Default()
	}
	clock := o.Clock
	if clock == nil {
		var start time.Time
		if scn.Start != "" {
			start, _ = time.Parse(time.RFC3339, scn.Start)
		}
		var err error
		if clock, err = ParseClock("real", start); err != nil {
			return nil, err
		}
	}
	s := &Server{
		scn: scn, seed: o.Seed, clock: clock, start: clock.Now(),
		tokenRate: scn.TokenRate, maxBody: o.MaxBody, log: o.Logger,
		models: map[string]modelInfo{},
		stats:  map[string]*ModelStats{}, changed: make(chan struct{}), rates: map[string]*rateWindow{}, scripts: map[string]*Script{},
		rng:  rand.New(rand.NewPCG(uint64(o.Seed), 0x5b111)),
		done: make(chan struct{}),
	}
	if o.TokenRate >= 0 && o.TokenRate != s.tokenRate {
		s.tokenRate = o.TokenRate
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for name, m := range cfg.Models {
		for _, d := range cfg.Deployments(name) {
			if cfg.Providers[d.Provider].Cloud() != "" {
				continue // addCloudModels
			}
			s.models[d.Upstream] = modelInfo{name: d.Upstream, provider: string(cfg.ProviderType(d.Provider)), tier: string(m.Tier), context: m.Context}
		}
	}
	for name, m := range scn.Extra {
		s.models[name] = modelInfo{name: name, provider: m.Provider, tier: m.Tier, context: m.Context}
	}
	s.addCloudModels(cfg)
	s.region = o.region
	if s.auth = o.auth; s.auth == nil {
		var err error
		if s.auth, err = newCloudAuth(o.Clouds); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(scn.Regions) {
		if !slices.Contains(o.Regions, name) {
			return nil, fmt.Errorf("sim: scenario %s: regions.%s: the simulator serves no region %s; add it to --regions (serving: %q)", scn.Name, name, name, o.Regions)
		}
	}
	for _, region := range o.Regions {
		if !regionName.MatchString(region) || s.regions[region] != nil || slices.Contains(reservedPaths, region) {
			return nil, fmt.Errorf("sim: region %q: a name of letters, digits and dashes, each once (not %s)", region, strings.Join(reservedPaths, ", "))
		}
		ro := o
		// its own load noise, the same time; the seed comes from the region's
		// name, not its place in the list, so a region behaves the same
		// whichever other regions run beside it
		ro.Regions, ro.Seed, ro.Clock = nil, regionSeed(o.Seed, region), clock
		ro.Scenario, ro.auth, ro.region = scn.forRegion(region), s.auth, region
		rs, err := New(ro)
		if err != nil {
			return nil, err
		}
		if s.regions == nil {
			s.regions = map[string]*Server{}
		}
		s.regions[region] = rs
	}
	return s, nil
}

func regionSeed(seed int64, region string) int64 {
	h := fnv.New64a()
	h.Write([]byte(region))
	return seed ^ int64(h.Sum64())
}

var regionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// reservedPaths are the first path segments the simulator serves itself:
// no region's name.
var reservedPaths = []string{"v1", "v1beta", "_sim", "model", "token"}

// servesRegion reports whether a request this server answers may be
// scoped (SigV4) to region: a region's server is that region only; the
// root is any region it runs under a prefix, or any region at all when
// it runs none (a simulator without --regions stands for every region).
func (s *Server) servesRegion(region string) bool {
	switch {
	case s.region != "":
		return region == s.region
	case len(s.regions) > 0:
		return s.regions[region] != nil
	}
	return true
}

// Region is the simulator serving under /region/, nil for a region it does
// not have.
func (s *Server) Region(name string) *Server { return s.regions[name] }

// Close makes stalled requests give up; the HTTP server is the caller's.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	for _, r := range s.regions {
		r.Close()
	}
}

// Clock returns the simulator's clock.
func (s *Server) Clock() Clock { return s.clock }

// Handler routes every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	// a ChatGPT plan's Codex backend (Codex signed in with ChatGPT)
	mux.HandleFunc("POST /backend-api/codex/responses", s.handleChatGPTResponses)
	mux.HandleFunc("/backend-api/", s.handleChatGPTOther)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{model}", s.handleModel)
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1beta/models/{target}", s.handleGemini)
	mux.HandleFunc("GET /v1beta/models", s.handleGeminiModels)
	mux.HandleFunc("POST /v1/models/{target}", s.handleGemini)
	// the clouds (bedrock.go, vertex.go, gtoken.go)
	mux.HandleFunc("POST /model/{rest...}", s.handleBedrock)
	mux.HandleFunc("POST /v1/projects/{rest...}", s.handleVertex)
	mux.HandleFunc("POST /token", s.handleToken)
	mux.HandleFunc("GET /_sim/faults", s.handleFaultsList)
	mux.HandleFunc("POST /_sim/faults", s.handleFaultsAdd)
	mux.HandleFunc("DELETE /_sim/faults", s.handleFaultsClear)
	mux.HandleFunc("GET /_sim/script", s.handleScriptList)
	mux.HandleFunc("POST /_sim/script", s.handleScriptAdd)
	mux.HandleFunc("DELETE /_sim/script", s.handleScriptClear)
	mux.HandleFunc("GET /_sim/stats", s.handleStats)
	mux.HandleFunc("DELETE /_sim/stats", s.handleStatsReset)
	mux.HandleFunc("GET /_sim/scenario", s.handleScenario)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	for name, r := range s.regions {
		mux.Handle("/"+name+"/", stripRegion(name, r.Handler()))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1internal:") { // Code Assist (codeassist.go)
			s.handleCodeAssist(w, r)
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "type": "invalid_request_error", "param": nil, "code": nil}})
	})
	return mux
}

// ListenAndServe serves on addr until ctx ends. ready, when not nil, gets the
// bound address once listening.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	err := serve.Run(ctx, addr, s.Handler(), serve.Options{Ready: ready, OnStop: s.Close,
		Server: &http.Server{ReadHeaderTimeout: 10 * time.Second}})
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// ModelStats are one model's counters.
type ModelStats struct {
	Received        int            `json:"received"`
	Served          int            `json:"served"`
	Rejected        map[string]int `json:"rejected"`
	PeakConcurrency int            `json:"peak_concurrency"`
	Inflight        int            `json:"inflight"`
	TokensIn        int            `json:"tokens_in"`
	TokensOut       int            `json:"tokens_out"`
	// Streamed counts the answers served as streams (Served counts all).
	Streamed int `json:"streamed"`
	// Credentials counts the credentials requests came with, by
	// Fingerprint (never the credential itself): a test checks that what
	// reached the provider is exactly what its client sent.
	Credentials map[string]int `json:"credentials,omitempty"`
	// Starts are the real times (Unix ms) requests were admitted, the last
	// 1000; tests check pacing with them.
	Starts       []int64        `json:"starts_ms,omitempty"`
	Faults       map[string]int `json:"faults,omitempty"`
	inflightCost float64
}

func (s *Server) stat(model string) *ModelStats {
	st := s.stats[model]
	if st == nil {
		st = &ModelStats{Rejected: map[string]int{}}
		s.stats[model] = st
	}
	return st
}

func (s *Server) count(model string, f func(*ModelStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.stat(model))
	s.statsChanged()
}

// statsChanged wakes WaitStats's waiters; s.mu is held.
func (s *Server) statsChanged() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Stats is the /_sim/stats document.
type Stats struct {
	Clock    time.Time              `json:"clock"`
	Scenario string                 `json:"scenario"`
	Models   map[string]*ModelStats `json:"models"`
	Load     map[string]float64     `json:"load"`
}

// Snapshot returns a copy of the counters.
func (s *Server) Snapshot() Stats {
	now := s.clock.Now()
	out := Stats{Clock: now, Scenario: s.scn.Name, Models: map[string]*ModelStats{}, Load: map[string]float64{}}
	names := make([]string, 0, len(s.models))
	for n := range s.models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out.Load[n] = float64(int(s.Load(n, now)*1000)) / 1000
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, st := range s.stats {
		c := *st
		c.Rejected = map[string]int{}
		for k, v := range st.Rejected {
			c.Rejected[k] = v
		}
		c.Starts = append([]int64(nil), st.Starts...)
		c.Credentials = maps.Clone(st.Credentials)
		out.Models[n] = &c
	}
	return out
}

// WaitStats waits until cond holds of the counters, checking them now and
// after each change, and returns them; when ctx ends first it returns the
// last counters and ctx's error. A client has the end of an answer before
// the simulator, past its last write, counts it served: a test waits here
// for the count instead of polling Snapshot.
func (s *Server) WaitStats(ctx context.Context, cond func(Stats) bool) (Stats, error) {
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		st := s.Snapshot()
		if cond(st) {
			return st, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Snapshot())
}

// ResetStats sets the counters back to zero (what is in flight stays).
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, st := range s.stats {
		s.stats[n] = &ModelStats{Rejected: map[string]int{}, Inflight: st.Inflight, inflightCost: st.inflightCost}
	}
	s.statsChanged()
	s.rates = map[string]*rateWindow{}
}

func (s *Server) handleStatsReset(w http.ResponseWriter, _ *http.Request) {
	s.ResetStats()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleScenario(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.scn)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return fmt.Sprintf("%s%08x%04x", prefix, uint32(s.seed), n)
}

// chance draws from the seeded source.
func (s *Server) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < p
}

// sortedModels lists the served models of one wire format.
func (s *Server) sortedModels(provider string) []modelInfo {
	var out []modelInfo
	for _, m := range s.models {
		if provider == "" || m.provider == provider {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + "***" + k[len(k)-3:]
}
