package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// Options configure a Server.
type Options struct {
	Config *config.Config
	// Engine is the policy engine; one is made from Config when nil.
	Engine *policy.Engine
	// Events receives one record per upstream attempt; nothing when nil.
	Events events.Sink
	// Dropped reports how many records the event writer dropped (metrics).
	Dropped func() uint64
	Logger  *slog.Logger
	// Transport sends upstream requests; a tuned http.Transport when nil.
	Transport http.RoundTripper
}

// Server is the gateway.
type Server struct {
	cfg     *config.Config
	engine  *policy.Engine
	rt      http.RoundTripper
	events  events.Sink
	log     *slog.Logger
	metrics *metrics
	maxBody int64

	started  time.Time
	inflight atomic.Int64
	total    atomic.Int64

	mu     sync.Mutex
	recent []Fallback // newest last, at most 50
}

// Fallback is a model switch, for /spillway/status.
type Fallback struct {
	TS        time.Time `json:"ts"`
	RequestID string    `json:"request_id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Class     string    `json:"class"`
}

// New builds a gateway.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("gateway: no configuration")
	}
	s := &Server{cfg: o.Config, engine: o.Engine, events: o.Events, log: o.Logger, started: time.Now()}
	if s.engine == nil {
		s.engine = policy.New(o.Config)
	}
	if s.events == nil {
		s.events = events.Nop{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tr := o.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	// Attempts go straight to the RoundTripper: no redirects are followed,
	// and no client timeout (streams last; the driver's watchdogs bound
	// them).
	s.rt = tr
	s.maxBody = int64(o.Config.Gateway.MaxBodyMB) << 20
	dropped := o.Dropped
	if dropped == nil {
		dropped = func() uint64 { return 0 }
	}
	s.metrics = newMetrics(func() float64 { return float64(dropped()) })
	s.engine.OnBreakerChange(func(key, from, to string) {
		s.metrics.breaker.WithLabelValues(key).Set(breakerValue(to))
		s.log.Warn("breaker", "key", key, "from", from, "to", to)
	})
	return s, nil
}

// Engine is the gateway's policy engine.
func (s *Server) Engine() *policy.Engine { return s.engine }

// Handler routes every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, ep := range wire.Endpoints {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { s.proxy(w, r, ep) })
	}
	// Gemini carries the model in the path: /v1beta/models/MODEL:METHOD
	mux.HandleFunc("POST /v1beta/models/{call}", s.handleGemini)
	mux.HandleFunc("GET /v1beta/models", s.handleGeminiModels)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /spillway/status", s.handleStatus)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, body := wire.ErrorBody(wire.Endpoint{Format: wire.OpenAI}, classify.BadRequest,
			fmt.Sprintf("spillway: no route for %s %s; the gateway serves POST /v1/responses, /v1/chat/completions, /v1/embeddings, /v1/messages, /v1beta/models/MODEL:generateContent and :streamGenerateContent, and GET /v1/models and /v1beta/models", r.Method, r.URL.Path))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write(body)
	})
	return mux
}

// ListenAndServe serves on addr until ctx ends. ready gets the bound address.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	err := serve.Run(ctx, addr, s.Handler(), serve.Options{Ready: ready, Grace: 10 * time.Second,
		Server: &http.Server{ReadHeaderTimeout: 15 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

func (s *Server) noteFallback(f Fallback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent = append(s.recent, f)
	if len(s.recent) > 50 {
		s.recent = s.recent[len(s.recent)-50:]
	}
}

// handleReady is the readiness probe: ready while every configured chain
// has a deployment whose breaker is not open and whose provider is not
// known to be down (a load balancer stops sending when it is not); 503
// names the chains that have none. /healthz says only that the process
// answers.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	states := s.engine.BreakerStates()
	down := map[string]bool{}
	for _, p := range s.engine.ProvidersDown() {
		down[p] = true
	}
	var unready []string
	for _, chain := range slices.Sorted(maps.Keys(s.cfg.Chains)) {
		ok := false
		for _, model := range s.cfg.Chains[chain] {
			for _, d := range s.cfg.Deployments(model) {
				st := states[policy.Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()]
				if st != "open" && !down[d.Provider] {
					ok = true
				}
			}
		}
		if !ok {
			unready = append(unready, chain)
		}
	}
	downs := slices.Sorted(maps.Keys(down))
	if len(unready) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "chains_without_a_deployment": unready, "providers_down": downs})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true, "providers_down": downs})
}

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) {
	type deployment struct {
		Name     string `json:"name"`
		Provider string `json:"provider"`
		Upstream string `json:"upstream"`
		Weight   int    `json:"weight"`
		Breaker  string `json:"breaker"`
	}
	type model struct {
		Name     string `json:"name"`
		Provider string `json:"provider"`
		Tier     string `json:"tier"`
		Context  int    `json:"context"`
		// Breaker is the model's: closed while one of its deployments is
		Breaker     string       `json:"breaker"`
		Deployments []deployment `json:"deployments,omitempty"`
	}
	states := s.engine.BreakerStates()
	var models []model
	for name, m := range s.cfg.Models {
		md := model{Name: name, Provider: m.Provider, Tier: string(m.Tier), Context: m.Context, Breaker: "open"}
		for _, d := range s.cfg.Deployments(name) {
			st := states[policy.Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()]
			if st == "" {
				st = "closed"
			}
			if st == "closed" || st == "half-open" && md.Breaker == "open" {
				md.Breaker = st
			}
			if d.Name != "" {
				md.Deployments = append(md.Deployments, deployment{d.Name, d.Provider, d.Upstream, d.Weight, st})
			}
		}
		models = append(models, md)
	}
	sort.Slice(models, func(i, j int) bool { return models[i].Name < models[j].Name })
	s.mu.Lock()
	recent := append([]Fallback(nil), s.recent...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"listen": s.cfg.Listen, "uptime_s": int(time.Since(s.started).Seconds()),
		"requests": s.total.Load(), "inflight": s.inflight.Load(),
		"chains": s.cfg.Chains, "models": models, "breakers": states, "recent_fallbacks": recent,
		"pacing": s.engine.Pacing(), "providers_down": nonNil(s.engine.ProvidersDown()),
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	anthropic := r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
	names := make([]string, 0, len(s.cfg.Models))
	for n := range s.cfg.Models {
		t := wire.Format(s.cfg.ModelType(n))
		if (anthropic && t == wire.Anthropic) || (!anthropic && t == wire.OpenAI) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	data := make([]any, 0, len(names))
	for _, n := range names {
		if anthropic {
			data = append(data, map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z"})
		} else {
			data = append(data, map[string]any{"id": n, "object": "model", "created": 1767225600, "owned_by": "spillway"})
		}
	}
	if anthropic {
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// handleGemini routes POST /v1beta/models/MODEL:METHOD: generateContent
// and streamGenerateContent through the driver, countTokens straight to
// the model's provider.
func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	for _, ep := range wire.GeminiEndpoints {
		if string(ep.Kind) == method && model != "" {
			s.proxy(w, r, ep)
			return
		}
	}
	if method == "countTokens" && model != "" {
		s.passThrough(w, r, model, method)
		return
	}
	ep := wire.GeminiEndpoints[0]
	_, body := wire.ErrorBody(ep, classify.BadRequest, fmt.Sprintf("spillway: %s: the gateway serves generateContent, streamGenerateContent and countTokens of /v1beta/models/MODEL", r.PathValue("call")))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write(body)
}

// handleGeminiModels lists the configured Gemini models as Gemini does.
func (s *Server) handleGeminiModels(w http.ResponseWriter, _ *http.Request) {
	names := make([]string, 0, len(s.cfg.Models))
	for n := range s.cfg.Models {
		if wire.Format(s.cfg.ModelType(n)) == wire.Gemini {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	models := make([]any, 0, len(names))
	for _, n := range names {
		models = append(models, map[string]any{"name": "models/" + n, "displayName": n,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
