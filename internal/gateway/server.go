package gateway

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spillway/spillway/internal/redact"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
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
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/format/gemini"
	respfmt "github.com/spillway/spillway/internal/format/responses"
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
	// A gateway with a dashboard writes them to the dashboard, which
	// hands them on to the event log (its heatmap counts each once).
	Events events.Sink
	// Dropped reports how many records the event writer dropped (metrics).
	Dropped func() uint64
	Logger  *slog.Logger
	// Transport sends upstream requests; a tuned http.Transport when nil.
	Transport http.RoundTripper
	// Usage keeps the gateway keys' daily tokens (needed for daily_tokens).
	Usage Usage
	// Fleet, when set, is this gateway's membership of a fleet (state:
	// redis://…): its view goes to /spillway/status, its health to
	// /metrics.
	Fleet Fleet
	// Reload, when set, reloads the configuration (POST /spillway/reload,
	// with gateway.admin_key): it reads the file anew and calls
	// Server.Reload, or returns why it could not; ignored are the changes
	// it could not apply (a new listen address takes a restart), each in
	// words.
	Reload func() (kept, ignored []string, err error)
	// GiveBack gives the process's free memory back to the system; the
	// gateway calls it once nothing has been in flight for GiveBackAfter
	// (30 s when 0), and not again until a request has come and gone.
	// debug.FreeOSMemory when nil.
	GiveBack      func()
	GiveBackAfter time.Duration
	// Dashboard, when set, is the page served at / and /ui/ (internal/cli
	// wires internal/dash's board); without one those paths get the
	// provider-shaped 404.
	Dashboard Dashboard
}

// Dashboard is the live page the gateway serves (internal/dash's board):
// it is told of each model switch, and serves its own paths. Each
// attempt's record reaches it as the gateway's Events sink.
type Dashboard interface {
	Fallback(ts time.Time, requestID, from, to, class string)
	Handler() http.Handler
	Close()
}

// Server is the gateway.
type Server struct {
	// st is the configuration and the engine made for it; a reload swaps
	// both at once (Reload), and a request keeps the pair it started with.
	st       atomic.Pointer[gwState]
	reload   func() ([]string, []string, error)
	slots    slots // each gateway key's requests in flight
	reloadMu sync.Mutex
	usage    Usage
	fleet    Fleet
	rt       http.RoundTripper
	plans    *planLimits // the plan headers the upstreams sent last
	events   events.Sink
	log      *slog.Logger
	metrics  *metrics

	started  time.Time
	inflight atomic.Int64
	total    atomic.Int64

	mu     sync.Mutex
	recent []Fallback // newest last, at most 50

	bytes inflight // request and answer bytes held (gateway.max_inflight_mb)
	quiet quiet    // memory given back after a burst

	dash Dashboard // nil: none
	// exposed: the gateway listens beyond loopback (its configuration
	// says so, or the address it bound does); the dashboard and
	// /spillway/* then need the admin key
	exposed atomic.Bool
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
	s := &Server{events: o.Events, log: o.Logger, started: time.Now(), reload: o.Reload, usage: o.Usage, fleet: o.Fleet}
	engine := o.Engine
	if engine == nil {
		engine = policy.New(o.Config)
	}
	s.st.Store(newState(o.Config, engine))
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
	s.plans = &planLimits{now: func() time.Time { return s.Engine().Clock().Now() }}
	// a cloud provider's attempts are signed with spillway's own cloud
	// credentials as they leave, judged by the engine's clock
	s.rt = planTransport{rt: cloud.NewTransport(tr, clockOf(func() policy.Clock { return s.Engine().Clock() })), plans: s.plans}
	dropped := o.Dropped
	if dropped == nil {
		dropped = func() uint64 { return 0 }
	}
	s.quiet.clock = func() policy.Clock { return s.eng().Clock() }
	s.quiet.giveBack, s.quiet.after = o.GiveBack, o.GiveBackAfter
	if s.quiet.after <= 0 {
		s.quiet.after = quietAfter
	}
	if s.quiet.giveBack == nil {
		s.quiet.giveBack = debug.FreeOSMemory
	}
	s.metrics = newMetrics(func() float64 { return float64(dropped()) }, func() float64 { return float64(s.quiet.given.Load()) }, o.Fleet)
	s.watchBreakers(engine)
	s.exposed.Store(!config.Loopback(o.Config.Listen))
	s.dash = o.Dashboard
	return s, nil
}

// Close stops the dashboard's streams and timers.
func (s *Server) Close() {
	if s.dash != nil {
		s.dash.Close()
	}
}

// Counts are the requests the gateway has taken, and those in flight (for
// its dashboard).
func (s *Server) Counts() (total, inflight int64) { return s.total.Load(), s.inflight.Load() }

// Fleet is what the gateway shows of its fleet membership (fleet.Node).
type Fleet interface {
	// Status is the fleet as this process sees it (for /spillway/status).
	Status() map[string]any
	// Degraded reports whether the shared state was unreachable at the
	// last call.
	Degraded() bool
	// Sent and Received count the evidence published and heard.
	Sent() int64
	Received() int64
}

// gwState is a configuration and its engine, and the secrets of the
// configuration, redacted wherever text goes.
type gwState struct {
	cfg     *config.Config
	engine  *policy.Engine
	secrets redact.Secrets
	// crosses: a request may be answered by another vendor's model (its
	// history may then hold turns its own vendor must be sent fit)
	crosses bool
}

func newState(cfg *config.Config, engine *policy.Engine) *gwState {
	return &gwState{cfg: cfg, engine: engine, secrets: redact.NewSecrets(cfg.SecretValues()...), crosses: cfg.CrossVendor()}
}

func (s *Server) conf() *config.Config { return s.st.Load().cfg }

// stateKey keys the state a request was pinned to in its context.
type stateKey struct{}

// pin fixes the configuration and engine a request uses for its whole
// life: a reload while it runs does not change its keys, chains or
// providers halfway (its retries would otherwise be built from the new
// configuration).
func (s *Server) pin(r *http.Request) *http.Request {
	if _, ok := r.Context().Value(stateKey{}).(*gwState); ok {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), stateKey{}, s.st.Load()))
}

// stateOf is the state ctx was pinned to (the current one when none).
func (s *Server) stateOf(ctx context.Context) *gwState {
	if st, ok := ctx.Value(stateKey{}).(*gwState); ok {
		return st
	}
	return s.st.Load()
}

// maxBody is the largest request body accepted (gateway.max_body_mb).
func (st *gwState) maxBody() int64 { return int64(st.cfg.Gateway.MaxBodyMB) << 20 }

func (s *Server) eng() *policy.Engine { return s.st.Load().engine }

func (s *Server) watchBreakers(e *policy.Engine) {
	e.OnBreakerChange(func(key string, from, to policy.BreakerState) {
		if !s.eng().KnownKey(key) {
			// a model outside the configuration (a name a client made
			// up): no series of its own, so clients cannot grow /metrics
			s.log.Debug("breaker", "key", "other", "from", from, "to", to)
			return
		}
		s.metrics.breaker.WithLabelValues(key).Set(breakerValue(to))
		s.log.Warn("breaker", "key", key, "from", from, "to", to)
	})
}

// Reload makes cfg the configuration of the requests that start from now
// on, with an engine that keeps what the old one learned (breakers,
// reachability, pacing: policy.Engine.Reconfigured); requests in flight
// finish on the old. The listen address is not changed by a reload. It
// returns what was kept.
func (s *Server) Reload(cfg *config.Config) []string {
	s.reloadMu.Lock() // one reload at a time (SIGHUP and POST may meet)
	defer s.reloadMu.Unlock()
	old := s.st.Load()
	ne, kept := old.engine.Reconfigured(cfg)
	if !slices.Contains(kept, "breakers") {
		s.watchBreakers(ne)
	}
	s.st.Store(newState(cfg, ne))
	return kept
}

// Exposed reports a gateway that listens beyond loopback (its
// configuration's listen address, or the address it bound).
func (s *Server) Exposed() bool { return s.exposed.Load() }

// Engine is the gateway's policy engine (the current one, after a reload).
func (s *Server) Engine() *policy.Engine { return s.eng() }

// Handler routes every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, ep := range wire.Endpoints {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { s.proxy(w, r, ep) })
	}
	// Gemini carries the model in the path: /v1beta/models/MODEL:METHOD,
	// and /v1/models/MODEL:METHOD (@google/genai 3.x's default version),
	// where only Gemini's methods, or Google's SDK asking, are Gemini's
	// (gemini.Call, gemini.Caller)
	mux.HandleFunc("POST /v1beta/models/{call}", s.handleGemini)
	mux.HandleFunc("POST /v1/models/{call}", func(w http.ResponseWriter, r *http.Request) {
		if !gemini.Call(r.URL.Path) && !gemini.Caller(r.Header, r.URL.Query()) {
			s.noRoute(w, r)
			return
		}
		s.handleGemini(w, r)
	})
	// the model lists: /v1/models is OpenAI's, Anthropic's or Gemini's by
	// the caller's headers (formatOf)
	mux.HandleFunc("GET /v1beta/models", s.keyed(s.handleModels))
	mux.HandleFunc("GET /v1/models", s.keyed(s.handleModels))
	mux.HandleFunc("GET /v1beta/models/{model}", s.keyed(s.handleModel))
	mux.HandleFunc("GET /v1/models/{model}", s.keyed(s.handleModel))
	// Claude Code in its Bedrock and Vertex AI modes, and the clouds'
	// SDKs (clouds.go)
	for _, root := range []string{"/bedrock", ""} { // (cloudOf: the root too)
		mux.HandleFunc("POST "+root+"/model/{model}/{op}", s.handleBedrock)
		mux.HandleFunc("GET "+root+"/inference-profiles", s.keyed(s.inferenceProfiles))
		mux.HandleFunc("GET "+root+"/inference-profiles/{id}", s.keyed(s.inferenceProfile))
	}
	mux.HandleFunc("POST /vertex/", s.handleVertex)
	mux.HandleFunc("POST /v1/projects/", s.handleVertex)
	// Codex signed in with a ChatGPT plan (signin.go)
	mux.HandleFunc("POST "+respfmt.ChatGPT.Path, s.handleChatGPT)
	mux.HandleFunc(respfmt.ChatGPTPrefix+"/", s.handleChatGPTOther)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", s.metricsAuth(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /spillway/status", s.admin(s.handleStatus))
	if s.dash != nil {
		page := s.admin(s.dash.Handler().ServeHTTP)
		mux.HandleFunc("GET /{$}", page) // the dashboard; other paths keep the provider-shaped 404
		mux.HandleFunc("GET /ui/", page)
	}
	mux.HandleFunc("POST /spillway/reload", s.handleReload)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, gemini.CodeAssistPrefix+":") || strings.HasPrefix(r.URL.Path, gemini.CodeAssistPrefix+"/") {
			s.handleCodeAssist(w, r) // Gemini CLI signed in with Google (signin.go)
			return
		}
		s.noRoute(w, r)
	})
	return cloudAnswers(s.guard(mux))
}

// noRoute answers a request no route of the gateway's takes: 404, or 405
// for a route of another method, in the shape of the path's format.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	status, what := http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path
	if allow := methodsOf(r.URL.Path); allow != "" {
		// a route of the gateway's, asked with another method
		status, what = http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": this route takes "+allow
		w.Header().Set("Allow", allow)
	}
	body := formats.WireOf(formatOf(r)).StatusBody(status,
		fmt.Sprintf("spillway: %s; the gateway serves POST /v1/responses, /v1/chat/completions, /v1/embeddings, /v1/messages, /v1beta/models/MODEL:generateContent, :streamGenerateContent and :countTokens (under /v1/ too), GET /v1/models[/MODEL] and /v1beta/models[/MODEL], and a ChatGPT plan's Codex backend under /backend-api/codex/", what))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// formatOf is the provider whose shape an answer to r takes where no
// endpoint says it: Gemini's under /v1beta/ and for a Gemini model's
// methods under /v1/; on /v1/models and a model of it, the caller's, by its
// headers (Gemini's or Anthropic's credential or client header); Anthropic's
// at /v1/messages; else OpenAI's. So every refusal the gateway makes on a
// path of a format is in that format's shape.
func formatOf(r *http.Request) wire.Endpoint {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/v1beta/"), strings.HasPrefix(path, "/v1/") && gemini.Call(path):
		return wire.Endpoint{Format: wire.Gemini}
	case strings.HasPrefix(path, "/v1/messages"):
		return wire.Endpoint{Format: wire.Anthropic}
	case cloudOf(path) != "":
		// Messages' shape, which the cloud's answer (cloudAnswers) re-shapes
		return wire.Endpoint{Format: wire.Anthropic, Kind: wire.Messages, Cloud: cloudOf(path)}
	case path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"):
		switch {
		case gemini.Caller(r.Header, r.URL.Query()):
			return wire.Endpoint{Format: wire.Gemini}
		case wire.AnthropicCaller(r.Header):
			return wire.Endpoint{Format: wire.Anthropic}
		}
	}
	return wire.Endpoint{Format: wire.OpenAI}
}

// methodsOf is the method the gateway serves at path ("" when it serves
// nothing there): the mux sends a request of another method to "/".
func methodsOf(path string) string {
	for _, ep := range wire.Endpoints {
		if path == ep.Path {
			return http.MethodPost
		}
	}
	switch {
	case path == respfmt.ChatGPT.Path:
		return http.MethodPost
	case strings.HasPrefix(path, "/v1beta/models/") && strings.Contains(path, ":"), strings.HasPrefix(path, "/v1/models/") && gemini.Call(path):
		return http.MethodPost
	case path == "/v1/models", path == "/v1beta/models", path == "/healthz", path == "/readyz", path == "/metrics", path == "/spillway/status":
		return http.MethodGet
	case strings.HasPrefix(path, "/v1/models/") || strings.HasPrefix(path, "/v1beta/models/"):
		if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(path, "/v1/models/"), "/v1beta/models/"), "/") {
			return http.MethodGet // a model of the list
		}
	case path == "/spillway/reload":
		return http.MethodPost
	case strings.HasPrefix(path, bedrockPrefix+"model/"), strings.HasPrefix(path, "/model/"), strings.HasPrefix(path, vertexPrefix), strings.HasPrefix(path, "/v1/projects/"):
		return http.MethodPost
	case strings.HasSuffix(path, "/inference-profiles") && cloudOf(path) != "", strings.Contains(path, "/inference-profiles/") && cloudOf(path) != "":
		return http.MethodGet
	}
	return ""
}

// ListenAndServe serves on addr until ctx ends. ready gets the bound address.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	err := serve.Run(ctx, addr, s.Handler(), serve.Options{Grace: 10 * time.Second, OnStop: s.Close, Listener: s.limitConns,
		Ready: func(a net.Addr) {
			if !config.Loopback(a.String()) {
				s.exposed.Store(true)
			}
			if ready != nil {
				ready(a)
			}
		},
		// a request must come whole within read_timeout (net/http lifts
		// the deadline once the body is in: an answer may stream for
		// minutes, as TestTeamTimeouts holds), and a keep-alive connection
		// idle for keepalive_timeout is closed
		Server: &http.Server{ReadHeaderTimeout: 15 * time.Second, ReadTimeout: s.conf().Gateway.ReadTimeout.D(), IdleTimeout: s.conf().Gateway.KeepaliveTimeout.D(),
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

// limitConns caps the connections of a listener beyond loopback
// (gateway.max_connections, max_connections_per_address, as the
// configuration says at each new connection): N slow senders would
// otherwise hold N connections for read_timeout each. A loopback
// listener's are the user's own.
func (s *Server) limitConns(ln net.Listener) net.Listener {
	if config.Loopback(ln.Addr().String()) {
		return ln
	}
	return serve.LimitConns(ln, func() serve.Limits {
		g := s.conf().Gateway
		return serve.Limits{Total: g.MaxConnections, PerAddress: g.MaxConnectionsPerAddress}
	}, func(why serve.Refusal) { s.metrics.connsRefused.WithLabelValues(string(why)).Inc() })
}

func (s *Server) noteFallback(f Fallback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent = append(s.recent, f)
	if len(s.recent) > 50 {
		s.recent = s.recent[len(s.recent)-50:]
	}
}

// handleReload reloads the configuration for a caller with the admin key
// (Authorization: Bearer KEY or X-Spillway-Admin-Key: KEY). An invalid
// configuration is refused with its errors, and the old one keeps serving.
func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	want := s.conf().Gateway.AdminKey.Value
	switch {
	case want == "":
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "reloading over HTTP needs gateway.admin_key in the configuration; SIGHUP reloads too"})
		return
	case !adminKey(r, want, false):
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "the admin key is missing or wrong (Authorization: Bearer KEY, or X-Spillway-Admin-Key)"})
		return
	case s.reload == nil:
		writeJSON(w, http.StatusNotImplemented, map[string]any{"error": "this gateway has no configuration file to reload"})
		return
	}
	kept, ignored, err := s.reload()
	if err != nil {
		s.log.Error("reload refused; the old configuration keeps serving", "error", redact.String(err.Error()))
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"reloaded": false, "error": redact.String(err.Error())})
		return
	}
	if ignored == nil {
		ignored = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"reloaded": true, "kept": kept, "ignored": ignored})
}

// keyed guards h with the gateway keys, when there are any (a refusal in
// the shape of the request's format: formatOf).
func (s *Server) keyed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = s.pin(r)
		key, release, ok := s.admit(w, r, formatOf(r))
		if !ok {
			return
		}
		defer release()
		h(w, r.WithContext(context.WithValue(r.Context(), keyCtx{}, key)))
	}
}

// admin guards h with the admin key: when one is set, and always when the
// gateway listens beyond loopback (with none set, nothing gets in there).
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want := s.conf().Gateway.AdminKey.Value
		switch {
		case want == "" && s.exposed.Load():
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "this gateway listens beyond loopback: its dashboard and /spillway/* need gateway.admin_key, and none is set"})
			return
		case want != "" && !adminKey(r, want, r.Method == http.MethodGet || r.Method == http.MethodHead):
			// a browser asks for it (any user name, the key as password)
			w.Header().Set("WWW-Authenticate", `Basic realm="spillway gateway (the admin key as password)", charset="UTF-8"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "the admin key is missing or wrong (Authorization: Bearer KEY, X-Spillway-Admin-Key: KEY, or a browser's password prompt)"})
			return
		}
		h(w, r)
	}
}

// metricsAuth guards /metrics with gateway.metrics_key (a bearer token,
// compared in constant time) when one is set, and beyond loopback always,
// unless gateway.public_metrics: the series name the models, keys and
// deployments of the team.
func (s *Server) metricsAuth(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g := s.conf().Gateway
		want := g.MetricsKey.Value
		switch {
		case want == "" && (!s.exposed.Load() || g.PublicMetrics):
		case want == "":
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "this gateway listens beyond loopback: /metrics needs gateway.metrics_key (sent as Authorization: Bearer KEY), or gateway.public_metrics: true"})
			return
		case subtle.ConstantTimeCompare([]byte(bearer(r)), []byte(want)) != 1:
			w.Header().Set("WWW-Authenticate", `Bearer realm="spillway metrics"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "the metrics key is missing or wrong (Authorization: Bearer KEY; gateway.metrics_key)"})
			return
		}
		h.ServeHTTP(w, r)
	}
}

// adminKey reports whether r carries the admin key (compared in constant
// time): X-Spillway-Admin-Key, a bearer token, or, where basic allows it, a
// basic password. A browser sends a basic password it was given on its
// own, to any request to the gateway, a form posted from another site's
// page too: so only for what only reads (the page, the status).
func adminKey(r *http.Request, want string, basic bool) bool {
	got := cmp.Or(r.Header.Get("X-Spillway-Admin-Key"), bearer(r))
	if got == "" && basic {
		_, got, _ = r.BasicAuth()
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// handleReady is the readiness probe: ready while every configured chain
// has a deployment whose breaker is not open and whose provider is not
// known to be down (a load balancer stops sending when it is not); 503
// names the chains that have none. /healthz says only that the process
// answers.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	st := s.st.Load() // one configuration and its engine, whatever a reload does meanwhile
	states := st.engine.BreakerStates()
	down := map[string]bool{}
	for _, p := range st.engine.ProvidersDown() {
		down[p] = true
	}
	var unready []string
	for _, chain := range slices.Sorted(maps.Keys(st.cfg.Chains)) {
		ok := false
		for _, model := range st.cfg.Chains[chain] {
			for _, d := range st.cfg.Deployments(model) {
				st := states[policy.Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()]
				if st != policy.StateOpen && !down[d.Provider] {
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
	models := s.eng().Health()
	for i := range models { // only named deployments are listed
		models[i].Deployments = slices.DeleteFunc(models[i].Deployments, func(d policy.DeploymentHealth) bool { return d.Name == "" })
	}
	states := s.eng().BreakerStates()
	s.mu.Lock()
	recent := append([]Fallback(nil), s.recent...)
	s.mu.Unlock()
	st := map[string]any{
		"listen": s.conf().Listen, "uptime_s": int(time.Since(s.started).Seconds()),
		"requests": s.total.Load(), "inflight": s.inflight.Load(),
		"plan_limits": s.plans.list(), "chains": s.conf().Chains, "models": models, "breakers": states, "unknown_models": s.eng().OtherBreakers(), "recent_fallbacks": recent,
		"pacing": s.eng().Pacing(), "providers_down": nonNil(s.eng().ProvidersDown()),
	}
	if s.fleet != nil {
		st["fleet"] = s.fleet.Status()
	}
	writeJSON(w, http.StatusOK, st)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// handleModels lists the configured models the caller may use, of the
// format the path and the caller's headers say (formatOf), in that
// format's shape: OpenAI's list, Anthropic's, or Gemini's.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	f := formatOf(r).Format
	cfg := s.stateOf(r.Context()).cfg
	names := make([]string, 0, len(cfg.Models))
	for n := range cfg.Models {
		if _, ok := allowed(cfg, keyIn(r), n); ok && wire.Format(cfg.ModelType(n)) == f {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	data := make([]any, 0, len(names))
	for _, n := range names {
		data = append(data, formats.Envelope(f).ModelEntry(n))
	}
	writeJSON(w, http.StatusOK, formats.Envelope(f).ModelList(data))
}

// handleModel is one model of the list (GET /v1/models/MODEL,
// /v1beta/models/MODEL), in the shape of handleModels; 404 in that shape
// for a model the list does not have.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if gemini.Call(r.URL.Path) { // a Gemini method asked with GET
		s.noRoute(w, r)
		return
	}
	ep, name := formatOf(r), r.PathValue("model")
	cfg := s.stateOf(r.Context()).cfg
	if _, known := cfg.Models[name]; known && wire.Format(cfg.ModelType(name)) == ep.Format {
		if _, ok := allowed(cfg, keyIn(r), name); ok {
			writeJSON(w, http.StatusOK, formats.Envelope(ep.Format).ModelEntry(name))
			return
		}
	}
	list := strings.TrimSuffix(r.URL.Path, "/"+name)
	refuse(w, ep, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: model %q is not one of the %s models this gateway serves you (GET %s lists them)", name, ep.Format, list), 0)
}

// handleGemini routes POST /v1beta/models/MODEL:METHOD (and under /v1/):
// generateContent
// and streamGenerateContent through the driver, countTokens straight to
// the model's provider.
func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	r = s.pin(r)
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	if ep, ok := gemini.Endpoint(r.URL.Path, method); ok && model != "" {
		s.proxy(w, r, ep)
		return
	}
	if method == "countTokens" && model != "" {
		key, release, ok := s.admit(w, r, wire.GeminiEndpoints[0])
		if !ok {
			return
		}
		defer release()
		if chain, ok := allowed(s.stateOf(r.Context()).cfg, key, model); !ok {
			refuse(w, wire.GeminiEndpoints[0], http.StatusForbidden, classify.Auth, fmt.Sprintf("spillway: key %s may use chains %s; %s is in chain %q", key.Name, strings.Join(key.Chains, ", "), model, chain), 0)
			return
		}
		s.passThrough(w, r, model, method)
		return
	}
	refuse(w, wire.GeminiEndpoints[0], http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: %s: the gateway serves generateContent, streamGenerateContent and countTokens of /v1beta/models/MODEL and /v1/models/MODEL", r.PathValue("call")), 0)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
