package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/dash"
	"github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/policy"
)

// serveOptions are serve's flags.
type serveOptions struct {
	listen, events, logLevel, logFormat string
	upstreams                           []string
	giveBackAfter                       time.Duration
}

func (o *serveOptions) flags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.upstreams, "upstream", nil, "[openai=|anthropic=|gemini=]URL: serve from this upstream without a config file (repeatable; a bare URL serves all three formats, OpenAI at URL/v1)")
	f.StringVar(&o.listen, "listen", "", "address to listen on (default: the config's listen, 127.0.0.1:8787)")
	f.StringVar(&o.events, "events", "", "event log file, or - for none (default: events.path, else ~/.local/state/spillway/events.jsonl)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "text or json (one object a line: time, level, msg and the fields)")
	f.DurationVar(&o.giveBackAfter, "give-back-after", 30*time.Second, "give the process's free memory back to the system once no request has been in flight this long (once, until the next request)")
}

func (a *App) serveCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the capacity-aware gateway (OpenAI-, Anthropic- and Gemini-compatible)",
		Long: `serve runs the gateway. Point Codex CLI, Claude Code, Gemini CLI or any
OpenAI/Anthropic/Gemini SDK at it (see 'spillway setup'); when a model is at
capacity the request moves down its tier chain (to another vendor's model where
a chain allows it), waits when waiting is right, and fails fast with a clear
reason when waiting cannot help. Every upstream attempt is written to the event
log.

  OpenAI:    POST /v1/responses, /v1/chat/completions, /v1/embeddings; GET /v1/models
             Codex on a ChatGPT plan: /backend-api/codex/
  Anthropic: POST /v1/messages
  Gemini:    POST /v1beta/models/MODEL:generateContent, :streamGenerateContent,
             :countTokens (under /v1/ too); GET /v1beta/models[/MODEL];
             Gemini CLI signed in with Google: /v1internal
  Spillway:  GET / (the dashboard), /healthz, /readyz, /metrics (Prometheus),
             /spillway/status (JSON); POST /spillway/reload (with the admin key;
             SIGHUP reloads too)

Requests may send X-Spillway-Min-Tier: heavy|medium|light,
X-Spillway-No-Fallback: 1, X-Spillway-Budget: DURATION (the most to wait) and
X-Spillway-Hold: DURATION (0: off). Responses carry X-Spillway-Model, X-Spillway-Attempts
and X-Spillway-Route.`,
		Example: `  spillway serve
  spillway serve --listen 127.0.0.1:9000 --events ./events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), &o) },
	}
	o.flags(cmd.Flags())
	return cmd
}

// serveConfig is the configuration as the command line makes it: the file,
// then --listen and --upstream (a reload reads it the same way).
func (a *App) serveConfig(o *serveOptions) (*config.Config, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if o.listen != "" {
		cfg.Listen = o.listen
	}
	if err := applyUpstreams(cfg, o.upstreams); err != nil {
		return nil, err
	}
	return cfg, nil
}

// serveLogger is the logger --log-level and --log-format ask for.
func serveLogger(w io.Writer, logLevel, logFormat string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return nil, fail(ExitUsage, "--log-level %q: allowed: debug, info, warn, error", logLevel)
	}
	var handler slog.Handler
	switch logFormat {
	case "text":
		handler = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	default:
		return nil, fail(ExitUsage, "--log-format %q: text or json", logFormat)
	}
	return slog.New(handler), nil
}

func (a *App) serve(ctx context.Context, o *serveOptions) error {
	if o.giveBackAfter <= 0 {
		return fail(ExitUsage, "--give-back-after %s: must be positive (30s is the default)", o.giveBackAfter)
	}
	cfg, err := a.serveConfig(o)
	if err != nil {
		return err
	}
	if err := keysBeyondLoopback(cfg); err != nil {
		return err
	}
	logger, err := serveLogger(a.Stderr, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn("config", "warning", w)
	}
	usage := &lazyUsage{open: func(ctx context.Context) (*queue.Store, error) {
		return queue.Open(ctx, cfg.Queue.DB, a.dataDir(), queue.OpenOptions{})
	}}
	defer usage.close()
	opts := gateway.Options{Config: cfg, Logger: logger, Usage: usage, GiveBackAfter: o.giveBackAfter}
	if node, closeFleet, err := joinFleet(ctx, cfg, logger); err != nil {
		return err
	} else if node != nil {
		defer closeFleet()
		opts.Engine = policy.New(cfg, policy.WithFleet(node))
		opts.Fleet = node
	}
	ew, eventsPath, closeEvents, err := a.eventLog(o.events, cfg, func(err error) { logger.Warn("event log", "error", err.Error()) })
	if err != nil {
		return err
	}
	defer closeEvents()
	rl := &reloader{a: a, o: o, cfg: cfg, logger: logger}
	// the dashboard: the gateway writes its records to it, and it
	// hands them on to the event log (so that its heatmap, read
	// from the log, counts each attempt once)
	if opts.Engine == nil {
		opts.Engine = policy.New(cfg)
	}
	do := dash.Options{Engine: func() *policy.Engine { return rl.gw.Engine() }, Counts: func() (int64, int64) { return rl.gw.Counts() }, Exposed: func() bool { return rl.gw.Exposed() }, Clock: opts.Engine.Clock(),
		Queue: dashQueue{usage: usage, db: cfg.Queue.DB, dataDir: a.dataDir()}, Log: logger}
	if ew != nil {
		do.Events, do.Flush, do.EventLog, opts.Dropped = ew, ew.Flush, eventsPath, ew.Dropped
	}
	board := dash.New(do)
	opts.Events, opts.Dashboard = board, board
	opts.Reload = rl.reload
	if rl.gw, err = gateway.New(opts); err != nil {
		return fail(ExitFail, "%w", err)
	}
	stop := reloadOnHUP(ctx, rl.reload, logger)
	defer stop()
	serve.TuneGC(a.Getenv, serve.GatewayGC) // this process is the gateway's
	return a.listen(ctx, rl.gw, cfg, banner{events: eventsPath, fleet: fleetState(cfg, opts.Fleet)}, o.logFormat, logger)
}

// reloader reads the configuration again for a SIGHUP or a POST to
// /spillway/reload and hands it to the gateway.
type reloader struct {
	mu     sync.Mutex // a SIGHUP and a POST read the file one after the other
	a      *App
	o      *serveOptions
	cfg    *config.Config // what the gateway started with
	logger *slog.Logger
	gw     *gateway.Server
}

func (r *reloader) reload() ([]string, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := r.cfg
	next, err := r.a.serveConfig(r.o)
	switch {
	case err != nil:
	case cfg.Source != "" && next.Source != cfg.Source:
		// the file is gone (Find fell back to the defaults): a
		// reload would send the providers' traffic to the
		// public APIs and drop the admin key
		err = fmt.Errorf("%s, the file this gateway started from, is gone; the old configuration keeps serving (restart the gateway to serve without a file)", cfg.Source)
	case cfg.Source != "" && next.Blank:
		err = fmt.Errorf("%s holds no setting (it is empty, or only comments): a reload does not take the built-in defaults for the configuration this gateway started from; write it back, or restart the gateway to serve the defaults", cfg.Source)
	}
	if err == nil {
		// a reload must not open an open listener to everyone: the
		// listener is the one bound at the start (a changed listen
		// takes a restart)
		bound := *next
		bound.Listen = cfg.Listen
		err = keysBeyondLoopback(&bound)
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err != nil {
			err = ee.err
		}
		return nil, nil, err
	}
	ignored := startOnly(cfg, next, r.o.events != "")
	for _, why := range ignored {
		r.logger.Warn("reload: a change that takes a restart", "ignored", why)
	}
	kept := r.gw.Reload(next)
	r.logger.Info("reloaded", "kept", strings.Join(kept, ","))
	return kept, ignored, nil
}

// reloadOnHUP reloads on SIGHUP until ctx ends; an invalid configuration is
// refused and the old one keeps serving. The func it returns stops the
// signal's delivery.
func reloadOnHUP(ctx context.Context, reload func() ([]string, []string, error), logger *slog.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if _, _, err := reload(); err != nil {
					logger.Error("reload refused; the old configuration keeps serving", "error", err.Error())
				}
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

// fleetState words the fleet's store for the banner.
func fleetState(cfg *config.Config, node gateway.Fleet) string {
	if node == nil {
		return "none (state: memory)"
	}
	s := redact.String(cfg.State)
	if node.Degraded() {
		s += " (unreachable: this gateway goes on with its own breakers until it answers)"
	}
	return s
}

// listen serves gw on cfg.Listen until ctx ends, saying where once it
// listens (b's events and fleet are filled in).
func (a *App) listen(ctx context.Context, gw *gateway.Server, cfg *config.Config, b banner, logFormat string, logger *slog.Logger) error {
	err := gw.ListenAndServe(ctx, cfg.Listen, func(addr net.Addr) {
		b := newBanner(addr, cfg, b.events, b.fleet)
		if logFormat == "json" {
			logger.Info("listening", b.attrs()...)
		} else {
			b.write(a.Stderr)
		}
	})
	if err == nil {
		logger.Info("stopped", "listen", cfg.Listen)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fail(ExitFail, "%s is in use (another spillway serve, or another program): choose another address with --listen 127.0.0.1:PORT", cfg.Listen)
	}
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	return nil
}

// eventLog opens the event log a command writes: path (--events), else
// events.path, else the default location; "-" for none (a nil writer).
// It returns the path it chose, and the close that flushes the log.
// Records the log loses (a full disk) are told to warn: the first at
// once, then at most one line a minute with the count.
func (a *App) eventLog(path string, cfg *config.Config, warn func(error)) (*events.Writer, string, func(), error) {
	named := "--events"
	if path == "" {
		path, named = cfg.Events.Path, "events.path"
	}
	if path == "" {
		path, named = events.DefaultPath(a.Getenv), ""
	}
	if path == "-" {
		return nil, path, func() {}, nil
	}
	if dir := filepath.Dir(path); named != "" {
		// the default location is spillway's to make (events.NewWriter
		// does); a path of the user's must not: a typo would write the
		// log where nobody looks (the queue's --db refuses alike)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, path, nil, fail(ExitFail, "event log %s (%s): the directory %s does not exist (create it, or leave %s out for the default location)", path, named, dir, named)
		}
	}
	ew, err := events.NewWriter(path, int64(cfg.Events.MaxSizeMB)<<20, cfg.Events.Keep, events.WithErrorHandler(warn))
	if err != nil {
		return nil, path, nil, fail(ExitFail, "event log: %w", err)
	}
	return ew, path, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ew.Close(ctx)
	}, nil
}

// banner is what serve says once it listens: where each client points, what
// it loaded, and the fleet.
type banner struct {
	addr   string      // the address clients use first
	extra  []string    // the host's other addresses, listening beyond loopback
	bases  [][3]string // the JSON record's key, the line's words, the URL
	config string
	events string
	fleet  string
}

func newBanner(addr net.Addr, cfg *config.Config, events, fleet string) banner {
	b := banner{events: events, fleet: fleet, config: cfg.Source}
	if b.config == "" {
		b.config = "built-in defaults (no file)"
	}
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// every address of the host: clients on this machine use 127.0.0.1
		b.addr = net.JoinHostPort("127.0.0.1", port)
		if ifs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range ifs {
				if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && (n.IP.To4() != nil || host == "::") {
					b.extra = append(b.extra, net.JoinHostPort(n.IP.String(), port))
				}
			}
		}
	} else {
		b.addr = addr.String()
	}
	at := "http://" + b.addr
	// a personal sign-in's routes answer only on a gateway of one's own
	// (the gateway refuses them beyond loopback or with gateway.keys)
	signIns := len(cfg.Gateway.Keys) == 0 && config.Loopback(cfg.Listen) && config.Loopback(addr.String())
	signIn := func(provider string) bool { _, ok := cfg.Providers[provider]; return signIns && ok }
	if answers(cfg, config.OpenAI) {
		b.bases = append(b.bases, [3]string{"openai_base_url", "OpenAI base URL", at + "/v1"})
		if signIn(config.ChatGPT) {
			// (setup codex --chatgpt writes it as its provider's base_url)
			b.bases = append(b.bases, [3]string{"chatgpt_base_url", "Codex on a ChatGPT plan (provider base_url)", at + responses.ChatGPTPrefix})
		}
	}
	if answers(cfg, config.Anthropic) {
		b.bases = append(b.bases, [3]string{"anthropic_base_url", "Anthropic base URL", at})
	}
	if answers(cfg, config.Gemini) {
		b.bases = append(b.bases, [3]string{"gemini_base_url", "Gemini base URL", at})
		if signIn(config.CodeAssist) {
			b.bases = append(b.bases, [3]string{"code_assist_endpoint", "Gemini CLI signed in with Google (CODE_ASSIST_ENDPOINT)", at})
		}
	}
	return b
}

// answers reports whether a request in format (openai, anthropic, gemini)
// can be answered under cfg: a configured model speaks it (its chain takes
// requests in that format), or a model the configuration does not know
// goes to the provider of that name as named (passthrough_unknown).
func answers(cfg *config.Config, format config.Format) bool {
	for name := range cfg.Models {
		for _, d := range cfg.Deployments(name) {
			if !config.IsSignIn(d.Provider) && cfg.DeploymentType(d) == format {
				return true
			}
		}
	}
	_, ok := cfg.Providers[string(format)]
	return ok && cfg.PassesUnknown() && cfg.ProviderType(string(format)) == format
}

func (b banner) write(w io.Writer) {
	fmt.Fprintf(w, "spillway serve: listening on http://%s\n", b.addr)
	if len(b.extra) > 0 {
		fmt.Fprintf(w, "  also on: http://%s\n", strings.Join(b.extra, ", http://"))
	}
	for _, kv := range b.bases {
		fmt.Fprintf(w, "  %s: %s\n", kv[1], kv[2])
	}
	fmt.Fprintf(w, "  dashboard: http://%s/\n  config: %s\n  events: %s\n  fleet: %s\n", b.addr, b.config, b.events, b.fleet)
}

func (b banner) attrs() []any {
	out := []any{"listen", "http://" + b.addr}
	if len(b.extra) > 0 {
		out = append(out, "also", b.extra)
	}
	for _, kv := range b.bases {
		out = append(out, kv[0], kv[2])
	}
	return append(out, "dashboard", "http://"+b.addr+"/", "config", b.config, "events", b.events, "fleet", b.fleet)
}

// startOnly words the changes from cfg (what the gateway started with) to
// next that a reload cannot apply: the listener, the fleet's store and the
// event log are opened once, at the start.
// With --events given the file's events settings are not the log's.
func startOnly(cfg, next *config.Config, eventsFlag bool) []string {
	var out []string
	say := func(field, was, now string) {
		if was != now {
			out = append(out, fmt.Sprintf("%s: %q, still serving %q; it takes a restart", field, now, was))
		}
	}
	say("listen", cfg.Listen, next.Listen)
	say("state", redact.String(cfg.State), redact.String(next.State))
	if !eventsFlag {
		say("events.path", cfg.Events.Path, next.Events.Path)
		say("events.max_size_mb", strconv.Itoa(cfg.Events.MaxSizeMB), strconv.Itoa(next.Events.MaxSizeMB))
		say("events.keep", strconv.Itoa(cfg.Events.Keep), strconv.Itoa(next.Events.Keep))
	}
	return out
}

// warnEvents tells the user on stderr of records the event log lost.
func (a *App) warnEvents(err error) { fmt.Fprintf(a.Stderr, "spillway: %v\n", err) }

// applyUpstreams points providers at --upstream URLs: FORMAT=URL sets that
// provider's base URL; a bare URL sets all three (OpenAI's at URL/v1, as a
// server that speaks every format, such as spillway sim, serves it).
func applyUpstreams(cfg *config.Config, ups []string) error {
	for _, u := range ups {
		format, base, named := strings.Cut(u, "=")
		if !named || strings.Contains(format, "/") {
			format, base = "", u
		}
		if _, err := url.ParseRequestURI(base); err != nil || !strings.HasPrefix(base, "http") {
			return fail(ExitUsage, "--upstream %q: give a URL such as http://127.0.0.1:8790, or openai=https://… (anthropic=, gemini=)", u)
		}
		base = strings.TrimSuffix(base, "/")
		set := func(name, url string) {
			p := cfg.Providers[name]
			p.BaseURL = url
			cfg.Providers[name] = p
		}
		switch format {
		case "":
			set("openai", strings.TrimSuffix(base, "/v1")+"/v1")
			set("anthropic", strings.TrimSuffix(base, "/v1"))
			set("gemini", strings.TrimSuffix(base, "/v1"))
			set(config.ChatGPT, strings.TrimSuffix(base, "/v1")+"/backend-api/codex") // as spillway sim serves them
			set(config.CodeAssist, strings.TrimSuffix(base, "/v1"))
		case "openai", "anthropic", "gemini":
			set(format, base)
		default:
			return fail(ExitUsage, "--upstream %q: the format is openai, anthropic or gemini", u)
		}
	}
	return nil
}

// keysBeyondLoopback refuses a listen address beyond loopback (from the
// file or --listen) without gateway keys: anyone who reaches it could use
// the providers' keys.
func keysBeyondLoopback(cfg *config.Config) error {
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil || config.Loopback(cfg.Listen) || len(cfg.Gateway.Keys) > 0 {
		return nil // an address that does not parse fails at listen, by name
	}
	return fail(ExitUsage, "%s is reachable from other machines: set gateway.keys in the configuration first (spillway config hash-key makes their sha256: form), or listen on 127.0.0.1", cfg.Listen)
}

// dashQueue is the queue as the dashboard shows it: the configured
// database once it exists (a page does not make a SQLite file by looking).
type dashQueue struct {
	usage       *lazyUsage
	db, dataDir string
}

func (q dashQueue) Snapshot(ctx context.Context) (dash.QueueView, error) {
	if !queue.Exists(q.db, q.dataDir) {
		return dash.QueueView{}, dash.ErrNoQueue
	}
	st, err := q.usage.get(ctx)
	if err != nil {
		return dash.QueueView{}, err
	}
	counts, running, err := st.Summary(ctx)
	if err != nil {
		return dash.QueueView{}, err
	}
	v := dash.QueueView{Counts: counts, Running: []dash.QueueTask{}}
	for _, t := range running {
		v.Running = append(v.Running, dash.QueueTask{ID: t.ID, Name: t.Name, Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, Since: t.StartedAt})
	}
	return v, nil
}

// lazyUsage opens the queue's database for the gateway keys' daily tokens
// on first use (most gateways have no daily_tokens and never open it).
type lazyUsage struct {
	open  func(context.Context) (*queue.Store, error)
	mu    sync.Mutex
	store *queue.Store
}

func (u *lazyUsage) get(ctx context.Context) (*queue.Store, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.store == nil {
		s, err := u.open(ctx)
		if err != nil {
			return nil, err
		}
		u.store = s
	}
	return u.store, nil
}

func (u *lazyUsage) KeyUsed(ctx context.Context, name, day string) (int64, error) {
	s, err := u.get(ctx)
	if err != nil {
		return 0, err
	}
	return s.KeyUsed(ctx, name, day)
}

func (u *lazyUsage) KeyAdd(ctx context.Context, name, day string, n int64) error {
	s, err := u.get(ctx)
	if err != nil {
		return err
	}
	return s.KeyAdd(ctx, name, day, n)
}

func (u *lazyUsage) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.store != nil {
		u.store.Close()
	}
}
