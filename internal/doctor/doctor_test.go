package doctor_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/doctor"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// simWorld is the simulator on loopback, and a configuration whose three
// providers point at it.
func simWorld(t *testing.T, keys map[string]sim.Key) (*sim.Server, *config.Config) {
	t.Helper()
	srv, url := simtest.Start(t, keys)
	return srv, simtest.Config(url)
}

var configAt = simtest.Config

var keys = map[string]string{"OPENAI_API_KEY": "sk-doctor", "ANTHROPIC_API_KEY": "sk-ant-doctor", "GEMINI_API_KEY": "AIza-doctor"}

func run(t *testing.T, cfg *config.Config, mod func(*doctor.Options)) doctor.Report {
	t.Helper()
	env := map[string]string{"HOME": t.TempDir()}
	for k, v := range keys {
		env[k] = v
	}
	o := doctor.Options{Config: cfg, Getenv: func(k string) string { return env[k] }, Offline: true, Samples: 3, Timeout: 2 * time.Second}
	if mod != nil {
		mod(&o)
	}
	r := doctor.Run(context.Background(), o)
	for _, f := range r.Findings {
		t.Logf("%-8s %-7s %-18s %s | %s", f.Status, f.Area, f.Subject, f.Summary, f.Evidence)
	}
	t.Logf("verdict: %s", r.Verdict)
	return r
}

func find(r doctor.Report, area, subject string) *doctor.Finding {
	for i, f := range r.Findings {
		if f.Area == area && f.Subject == subject {
			return &r.Findings[i]
		}
	}
	return nil
}

func TestDoctorAgainstTheSimulator(t *testing.T) {
	for _, c := range []struct {
		name    string
		keys    map[string]sim.Key
		faults  []sim.Fault
		probe   bool
		code    int
		verdict string
		check   func(t *testing.T, r doctor.Report)
	}{
		{name: "healthy, no probe", code: 0, verdict: "The keys checked and the network are fine (capacity not checked: run with --probe)",
			check: func(t *testing.T, r doctor.Report) {
				if len(r.Unreached) == 0 || !strings.Contains(strings.Join(r.Unreached, " "), "--probe") || !strings.Contains(r.Cost, "nothing") {
					t.Errorf("unreached %v cost %q", r.Unreached, r.Cost)
				}
			}},
		{name: "healthy, probed", probe: true, code: 0, verdict: "The keys checked and the network are fine, and every model probed answered",
			check: func(t *testing.T, r doctor.Report) {
				if !strings.HasPrefix(r.Cost, "15 requests of one output token") {
					t.Errorf("cost %q: one request per configured model", r.Cost)
				}
			}},
		{name: "key rejected", keys: map[string]sim.Key{"sk-doctor": {State: "invalid"}}, code: doctor.ExitBroken,
			verdict: "Your openai key is rejected (401"},
		{name: "auth fault on the listing", faults: []sim.Fault{{Kind: "auth", Count: 1}}, code: doctor.ExitBroken, verdict: "key is rejected"},
		{name: "quota used up", keys: map[string]sim.Key{"sk-ant-doctor": {State: "quota"}}, code: doctor.ExitBroken,
			verdict: "Your anthropic quota is used up: capacity is not the problem"},
		{name: "a model at capacity", faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}}, probe: true, code: doctor.ExitDegraded,
			verdict: "Your account and network are fine; gpt-6-astra is at capacity right now: switch to gpt-6.1-sol",
			check: func(t *testing.T, r doctor.Report) {
				if f := find(r, "model", "gpt-6-astra"); f == nil || f.Class != "capacity" || !strings.Contains(f.Evidence, "503") {
					t.Errorf("astra: %+v", f)
				}
			}},
		{name: "rate-limited", faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "rate_limit", Count: -1, RetryAfter: 20}}, probe: true, code: doctor.ExitDegraded,
			verdict: "You are rate-limited on claude-opus-5-5",
			check: func(t *testing.T, r doctor.Report) {
				if f := find(r, "model", "claude-opus-5-5"); f == nil || !strings.Contains(f.Summary, "wait 20s") {
					t.Errorf("opus: %+v", f)
				}
			}},
		{name: "model not found", faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "model_not_found", Count: -1}}, probe: true, code: doctor.ExitBroken,
			verdict: "gemini-3-pro: model_not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cfg := simWorld(t, c.keys)
			for _, f := range c.faults {
				if err := srv.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, cfg, func(o *doctor.Options) { o.Probe = c.probe })
			if r.ExitCode() != c.code || !strings.Contains(r.Verdict, c.verdict) {
				t.Fatalf("exit %d, verdict %q; want %d and %q", r.ExitCode(), r.Verdict, c.code, c.verdict)
			}
			if c.check != nil {
				c.check(t, r)
			}
			b, _ := json.Marshal(r)
			for _, secret := range keys {
				if strings.Contains(string(b), secret) {
					t.Fatalf("a key reached the report")
				}
			}
		})
	}
}

// A model the provider does not list: the configuration or the access.
func TestDoctorModelNotListed(t *testing.T) {
	_, cfg := simWorld(t, nil)
	m := cfg.Models["gpt-6-astra"]
	m.Upstream = "gpt-6-astra-typo"
	cfg.Models["gpt-6-astra"] = m
	r := run(t, cfg, nil)
	if f := find(r, "model", "gpt-6-astra"); f == nil || f.Status != doctor.Degraded || !strings.Contains(f.Summary, "not in openai's list") {
		t.Fatalf("not listed: %+v", f)
	}
	if r.ExitCode() != doctor.ExitDegraded {
		t.Fatalf("exit %d", r.ExitCode())
	}
}

// A closed port, and a listener that accepts and never answers.
func TestDoctorNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	r := run(t, configAt("http://"+closed), nil)
	if r.ExitCode() != doctor.ExitBroken || !strings.Contains(r.Verdict, closed+" cannot be reached (TCP connect fails") {
		t.Fatalf("closed port: exit %d verdict %q", r.ExitCode(), r.Verdict)
	}
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	r = run(t, configAt("http://"+silent.Addr().String()), func(o *doctor.Options) { o.Timeout = 300 * time.Millisecond })
	if r.ExitCode() != doctor.ExitBroken || !strings.Contains(r.Verdict, "gives no answer") || !strings.Contains(r.Verdict, "timeout") {
		t.Fatalf("silent listener: exit %d verdict %q", r.ExitCode(), r.Verdict)
	}
}

// TLS: the handshake is measured against a local TLS server (its own CA).
func TestDoctorTLS(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	srv, _ := sim.New(sim.Options{Scenario: scn, Seed: 1})
	hs := httptest.NewTLSServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	tlsCfg := hs.Client().Transport.(*http.Transport).TLSClientConfig
	r := run(t, configAt(hs.URL), func(o *doctor.Options) { o.TLS = tlsCfg })
	host := strings.TrimPrefix(hs.URL, "https://")
	if f := find(r, "network", host); f == nil {
		t.Fatalf("no network finding for %s", host)
	}
	tlsOK := false
	for _, f := range r.Findings {
		tlsOK = tlsOK || (f.Summary == "TLS handshake" && f.Status == doctor.Healthy)
	}
	if !tlsOK || r.ExitCode() != 0 {
		t.Fatalf("TLS handshake not measured, or not healthy (exit %d)", r.ExitCode())
	}
	// without the CA, the handshake fails and says so
	r = run(t, configAt(hs.URL), nil)
	if r.ExitCode() != doctor.ExitBroken || !strings.Contains(r.Verdict, "TLS handshake fails") {
		t.Fatalf("untrusted certificate: exit %d verdict %q", r.ExitCode(), r.Verdict)
	}
}

// A status page with an incident (a local fake of the Statuspage API).
func TestDoctorStatusPage(t *testing.T) {
	_, cfg := simWorld(t, nil)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/summary.json" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":{"indicator":"major","description":"Partial System Outage"},"components":[{"name":"Chat Completions","status":"major_outage"},{"name":"Files","status":"operational"}],"incidents":[{"name":"Elevated errors on GPT-6"}]}`))
	}))
	defer page.Close()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":{"indicator":"none","description":"All Systems Operational"},"components":[]}`))
	}))
	defer healthy.Close()
	r := run(t, cfg, func(o *doctor.Options) {
		o.Offline = false
		o.StatusPages = map[string]string{"openai": page.URL, "anthropic": healthy.URL}
	})
	f := find(r, "status", "openai")
	if f == nil || f.Status != doctor.Degraded || !strings.Contains(f.Evidence, "Chat Completions: major outage") || !strings.Contains(f.Evidence, "Elevated errors on GPT-6") {
		t.Fatalf("status page: %+v", f)
	}
	if g := find(r, "status", "anthropic"); g == nil || g.Status != doctor.Healthy {
		t.Fatalf("anthropic page: %+v", g)
	}
	if r.ExitCode() != doctor.ExitDegraded || !strings.Contains(r.Verdict, "openai reports: Partial System Outage: the trouble is on their side") {
		t.Fatalf("exit %d verdict %q", r.ExitCode(), r.Verdict)
	}
}

// What the agents know: Codex's usage window nearly used up is told apart
// from capacity; recent failures in the agents' files are shown.
func TestDoctorAgents(t *testing.T) {
	_, cfg := simWorld(t, nil)
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "11", "30")
	os.MkdirAll(dir, 0o700)
	now := time.Now()
	resets := now.Add(40 * time.Minute).Unix()
	lines := []string{
		`{"timestamp":"` + now.Add(-time.Minute).UTC().Format(time.RFC3339) + `","type":"turn_context","payload":{"model":"gpt-6-astra"}}`,
		`{"timestamp":"` + now.Add(-time.Minute).UTC().Format(time.RFC3339) + `","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","primary":{"used_percent":97.0,"window_minutes":300,"resets_at":` + itoa(resets) + `},"secondary":{"used_percent":41.0,"window_minutes":10080,"resets_at":` + itoa(resets+86400) + `}}}}`,
		`{"timestamp":"` + now.Add(-time.Minute).UTC().Format(time.RFC3339) + `","type":"event_msg","payload":{"type":"task_complete","error":{"message":"Selected model is at capacity. Please try a different model.","codex_error_info":"server_overloaded"}}}`,
	}
	os.WriteFile(filepath.Join(dir, "rollout-x.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	r := run(t, cfg, func(o *doctor.Options) { o.CodexHome = home })
	var window *doctor.Finding
	for i, f := range r.Findings {
		if f.Area == "agent" && strings.Contains(f.Summary, "5-hour usage window is at 97%") {
			window = &r.Findings[i]
		}
	}
	if window == nil || window.Status != doctor.Degraded || window.Class != "usage_limit" {
		t.Fatalf("Codex window: %+v", window)
	}
	if r.ExitCode() != doctor.ExitDegraded || !strings.Contains(r.Verdict, "Codex 5-hour usage window is at 97%") || !strings.Contains(r.Verdict, "not capacity") {
		t.Fatalf("verdict %q", r.Verdict)
	}
	if f := find(r, "agent", "gpt-6-astra"); f == nil || !strings.Contains(f.Summary, "1 capacity") {
		t.Fatalf("recent failures: %+v", f)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A proxy in the environment is named, without its credentials.
func TestDoctorProxy(t *testing.T) {
	_, cfg := simWorld(t, nil)
	keys["HTTPS_PROXY"] = "http://me:s3cret@proxy.internal:3128"
	defer delete(keys, "HTTPS_PROXY")
	r := run(t, cfg, nil)
	f := find(r, "proxy", "HTTPS_PROXY")
	if f == nil || !strings.Contains(f.Evidence, "proxy.internal:3128") || strings.Contains(f.Evidence, "s3cret") {
		t.Fatalf("proxy: %+v", f)
	}
}

// Found in review: a slow model is degraded (not a configuration mistake);
// auth: key without its key is broken and says so; a proxy without a scheme
// is named without its password.
func TestDoctorReviewCases(t *testing.T) {
	srv, cfg := simWorld(t, nil)
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "slow", FirstDelayMS: 2000, Count: 1})
	r := run(t, cfg, func(o *doctor.Options) { o.Probe, o.Timeout = true, 300*time.Millisecond })
	if f := find(r, "model", "gpt-6-astra"); f == nil || f.Status != doctor.Degraded || !strings.Contains(f.Summary, "no answer within --timeout") {
		t.Fatalf("a slow model: %+v", f)
	}
	if strings.Contains(r.Verdict, "Fix the model in the configuration") {
		t.Fatalf("a slow model blamed on the configuration: %s", r.Verdict)
	}

	_, cfg = simWorld(t, nil)
	p := cfg.Providers["anthropic"]
	p.Auth, p.APIKey = "key", config.Secret{Ref: "env:SPILLWAY_DOCTOR_UNSET"}
	cfg.Providers["anthropic"] = p
	r = run(t, cfg, nil)
	if f := find(r, "key", "anthropic"); f == nil || f.Status != doctor.Broken || !strings.Contains(f.Summary, "auth: key without a key (api_key env:SPILLWAY_DOCTOR_UNSET (not set))") {
		t.Fatalf("auth: key without its key: %+v", f)
	}

	keys["HTTPS_PROXY"] = "user:s3cretpw@proxy.internal:8080"
	defer delete(keys, "HTTPS_PROXY")
	_, cfg = simWorld(t, nil)
	r = run(t, cfg, nil)
	if f := find(r, "proxy", "HTTPS_PROXY"); f == nil || strings.Contains(f.Evidence, "s3cretpw") {
		t.Fatalf("proxy without a scheme: %+v", f)
	}
}

// A Claude plan's usage limit in Claude Code's transcript, its reset still
// to come: doctor says it is the plan's limit and when it resets, not
// capacity.
func TestDoctorClaudeUsageLimit(t *testing.T) {
	_, cfg := simWorld(t, nil)
	home := t.TempDir()
	dir := filepath.Join(home, "projects", "-work")
	os.MkdirAll(dir, 0o700)
	now := time.Now()
	reset := now.Add(2 * time.Hour).Truncate(time.Second)
	line := `{"type":"assistant","timestamp":"` + now.Add(-10*time.Minute).UTC().Format(time.RFC3339) + `","isApiErrorMessage":true,"apiErrorStatus":429,"message":{"id":"m1","model":"<synthetic>","content":[{"type":"text","text":"Claude AI usage limit reached|` + itoa(reset.Unix()) + `"}],"usage":{"input_tokens":0}}}`
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(line+"\n"), 0o600)
	r := run(t, cfg, func(o *doctor.Options) { o.ClaudeHome = home })
	var f *doctor.Finding
	for i := range r.Findings {
		if r.Findings[i].Class == "usage_limit" && r.Findings[i].Subject == "claude" {
			f = &r.Findings[i]
		}
	}
	if f == nil || f.Status != doctor.Broken || !strings.Contains(f.Summary, "resets at "+reset.Local().Format("Jan 2 15:04")) {
		t.Fatalf("the Claude plan's limit: %+v (all %+v)", f, r.Findings)
	}
	if !strings.Contains(r.Verdict, "Claude Code plan's usage limit") || !strings.Contains(r.Verdict, "--until-reset") {
		t.Fatalf("verdict %q", r.Verdict)
	}
}

// What the local gateway saw of a ChatGPT plan's windows: a window used up,
// its reset still to come, is the plan's limit, not capacity.
func TestDoctorReadsTheGatewaysPlanHeaders(t *testing.T) {
	_, cfg := simWorld(t, nil)
	reset := time.Now().Add(3 * time.Hour).Unix()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/spillway/status" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"plan_limits":[{"host":"chatgpt.com","seen":"` + time.Now().UTC().Format(time.RFC3339) + `","headers":{"x-codex-primary-used-percent":"100.0","x-codex-primary-window-minutes":"300","x-codex-primary-reset-at":"` + itoa(reset) + `","x-codex-secondary-used-percent":"40","x-codex-secondary-window-minutes":"10080"}}]}`))
	}))
	defer gw.Close()
	r := run(t, cfg, func(o *doctor.Options) { o.Gateway = gw.URL })
	var used, weekly *doctor.Finding
	for i, f := range r.Findings {
		if f.Area == "plan" && strings.Contains(f.Summary, "5-hour") {
			used = &r.Findings[i]
		}
		if f.Area == "plan" && strings.Contains(f.Summary, "1-week") {
			weekly = &r.Findings[i]
		}
	}
	if used == nil || used.Status != doctor.Broken || used.Class != "usage_limit" || weekly == nil || weekly.Status != doctor.Healthy {
		t.Fatalf("plan findings: %+v %+v (all %+v)", used, weekly, r.Findings)
	}
	if !strings.Contains(r.Verdict, "ChatGPT plan's 5-hour usage window at 100%") {
		t.Fatalf("verdict %q", r.Verdict)
	}
}
