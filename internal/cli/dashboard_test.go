package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

// dashEnv is the environment of the dashboard tests' commands: their own
// home and data directory (the queue's database), and the keys.
func dashEnv(dir string) []string {
	return append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "SPILLWAY_TEST_ADMIN=adm-0123456789", "SPILLWAY_TEST_KEY=gw-0123456789")
}

// startServe runs `spillway serve` with the configuration body, and
// returns its base URL once it listens.
func startServe(t *testing.T, bin, dir, body string, args ...string) string {
	base, _ := startServeLog(t, bin, dir, body, args...)
	return base
}

// startServeLog is startServe, and what the gateway has written to
// stderr so far.
func startServeLog(t *testing.T, bin, dir, body string, args ...string) (string, func() string) {
	t.Helper()
	base, logs, _ := startServeStop(t, bin, dir, body, args...)
	return base, logs
}

var listeningOn = regexp.MustCompile(`listening on http://(\S+)`)

// startServeStop is startServeLog, and a stop that ends the gateway as
// SIGTERM does (it finishes the requests in flight and flushes its event
// log) and returns once it has exited: what the gateway wrote is then
// all there.
func startServeStop(t *testing.T, bin, dir, body string, args ...string) (string, func() string, func()) {
	t.Helper()
	return startServeEnv(t, bin, dashEnv(dir), dir, body, args...)
}

// startServeEnv is startServeStop with the gateway's whole environment
// env (nothing of the test's own).
func startServeEnv(t *testing.T, bin string, env []string, dir, body string, args ...string) (string, func() string, func()) {
	t.Helper()
	cfgPath := filepath.Join(dir, "spillway.yaml")
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--config", cfgPath}, args...)...)
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs strings.Builder
	found, exited := make(chan string, 1), make(chan struct{}) // exited: stderr is closed
	go func() {
		defer close(exited)
		for sc := bufio.NewScanner(stderr); sc.Scan(); {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil && len(found) == 0 {
				found <- "http://" + m[1]
			}
		}
	}()
	wait := sync.OnceFunc(func() { <-exited; cmd.Wait() }) // Wait once stderr is read whole
	t.Cleanup(func() { cancel(); wait() })
	logsNow := func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }
	stop := func() {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-waitCtx(t).Done():
			cancel()
			t.Errorf("spillway serve did not stop on SIGTERM:\n%s", logsNow())
		}
		wait()
	}
	select {
	case base := <-found:
		return base, logsNow, stop
	case <-exited:
		select {
		case base := <-found:
			return base, logsNow, stop
		default:
		}
	}
	t.Fatalf("spillway serve did not start:\n%s", logsNow())
	return "", nil, nil
}

// waitCtx is t's context for a wait on another process: it ends with the
// test, or a tenth of the time left before the test binary's deadline, so
// that a wait for what never comes fails the test with its own message
// rather than the binary's timeout. It is no bound on how long anything
// should take.
func waitCtx(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
		t.Cleanup(cancel)
	}
	return ctx
}

// The dashboard, end to end: the simulator and `spillway serve`, the page
// open in headless Chromium, then traffic with a capacity fault on the
// codex chain's heavy model. Without a reload the page shows that model
// failing and its fallbacks rising; it makes no request beyond the
// gateway and logs no console error, and fits a phone's width. A
// screenshot is kept.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	scn, _ := sim.Builtin("calm")
	srv, _ := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	bin := spillwayBin(t)
	dir := t.TempDir()
	// a task waits in the queue's default database (a window far off)
	add := exec.Command(bin, "queue", "add", "--name", "nightly", "--model", "gpt-6-luna", "--prompt", "hi", "--window", "03:00-03:01")
	add.Env = dashEnv(dir)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("queue add: %v\n%s", err, out)
	}
	base := startServe(t, bin, dir, "providers:\n  openai: { base_url: \""+hs.URL+"/v1\" }\n  anthropic: { base_url: \""+hs.URL+"\" }\n  gemini: { base_url: \""+hs.URL+"\" }\n",
		"--listen", "127.0.0.1:0", "--events", filepath.Join(dir, "events.jsonl"))
	br := clienttest.NewBrowser(t, func(url string) bool { return strings.HasPrefix(url, base+"/") })
	ctx := br.Ctx
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`#chains tr.model[data-model="gpt-6-astra"]`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").dataset.live === "live"`)); err != nil {
		t.Fatal(err)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { window.sameLoad = "yes"; return document.querySelector('tr.model[data-model="gpt-6-astra"]').dataset.status; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if before == "failing" {
		t.Fatalf("gpt-6-astra shows %q before any fault", before)
	}

	// the heavy model is full: requests fall back to the medium one
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	for i := range 4 {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(fmt.Sprintf(`{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi %d"}]}`, i)))
		req.Header.Set("Authorization", "Bearer sk-dashboard-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// capacity, then (its breaker open) skipped
		if route := resp.Header.Get("X-Spillway-Route"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(route, "gpt-6-astra:") || !strings.HasSuffix(route, "gpt-6.1-sol:ok") {
			t.Fatalf("request %d: %d, route %q: want 200 from gpt-6.1-sol after gpt-6-astra", i, resp.StatusCode, route)
		}
	}
	// the gateway's own count of the model switches
	resp, err := http.Get(base + "/spillway/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Recent []json.RawMessage `json:"recent_fallbacks"`
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	switches := len(st.Recent)
	if switches < 2 {
		t.Fatalf("the gateway counts %d fallbacks; want at least the 2 capacity answers'", switches)
	}
	// the page follows without a reload: it polls its own DOM, which only
	// its one event stream changes
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.querySelector('tr.model[data-model="gpt-6-astra"]').dataset.status === "failing"`),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`+document.getElementById("fallbacks").textContent === %d`, switches)),
		chromedp.Poll[chromedp.Void](`document.querySelector('#failures tbody tr[data-class="capacity"]') !== null`),
		// the heatmap's day as the report writes one, never the browser's locale (12/6/2026)
		chromedp.Poll[chromedp.Void](`/^\(since \d{4}-\d\d-\d\d, /.test(document.getElementById("heat-note").textContent)`)); err != nil {
		t.Fatal(err)
	}
	type view struct {
		SameLoad, Status, Why, Sol, Queue string
		Fallbacks, Flow                   int
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => ({
		SameLoad: window.sameLoad || "",
		Status: document.querySelector('tr.model[data-model="gpt-6-astra"]').dataset.status,
		Sol: document.querySelector('tr.model[data-model="gpt-6.1-sol"]').dataset.status,
		Why: document.querySelector('#failures tbody tr[data-class="capacity"] td.why').textContent,
		Fallbacks: +document.getElementById("fallbacks").textContent,
		Flow: document.querySelectorAll('#flow li.switch').length,
		Queue: document.getElementById("queue-section").hidden ? "hidden" : document.getElementById("queue-counts").textContent,
	}))()`))
	if err != nil {
		t.Fatal(err)
	}
	if v.SameLoad != "yes" {
		t.Errorf("the page was reloaded (its mark is gone)")
	}
	if v.Queue != "scheduled1" && v.Queue != "queued1" { // queued within its minute of the night
		t.Errorf("the queue shows %q; want its one task, scheduled", v.Queue)
	}
	if v.Sol != "healthy" {
		t.Errorf("gpt-6.1-sol, which answered, shows %q; want healthy", v.Sol)
	}
	if !strings.Contains(v.Why, "shared pool is full") {
		t.Errorf("the failure's explanation is %q; want the classifier's words for capacity", v.Why)
	}
	if v.Fallbacks != switches || v.Flow < 1 {
		t.Errorf("fallbacks %d (want the gateway's %d), fallback lines in the live flow %d (want ≥ 1)", v.Fallbacks, switches, v.Flow)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	clienttest.SaveArtifact(t, "dashboard.png", shot)

	// a phone's width: nothing wider than the screen but what scrolls in its box
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Poll[chromedp.Void](`window.innerWidth === 390`)); err != nil {
		t.Fatal(err)
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if wide > 390 {
		t.Errorf("at 390 px the page is %d px wide: it does not fit a phone", wide)
	}
	// the models' tables fit without scrolling sideways; an idle half-open
	// breaker counts down nothing; the two fallback counts say which is which
	type phone struct {
		Cut                 []string
		HalfOpen, Head, Col string
	}
	ph, err := chromedp.Run(ctx, chromedp.Evaluate[phone](`(() => ({
		Cut: [...document.querySelectorAll('#chains .scroll')].filter(s => s.scrollWidth > s.clientWidth).map(s => s.parentElement.dataset.chain),
		HalfOpen: breakerText("half-open", 1.25),
		Head: document.getElementById("fallbacks").parentElement.title,
		Col: document.querySelector('#heat-models th[title]').textContent,
	}))()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ph.Cut) > 0 || ph.HalfOpen != "half open · the next request probes it" || !strings.Contains(ph.Head, "a skip past an open breaker included") || ph.Col != "fallback attempts" {
		t.Errorf("at 390 px: %+v", ph)
	}
	if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		clienttest.SaveArtifact(t, "dashboard-phone.png", shot)
	}
	if p := br.Problems(); len(p) > 0 {
		t.Errorf("the page is not self-contained or not clean: %v", p)
	}
}

// Beyond loopback the dashboard and /spillway/* need the admin key: 401
// without it (or with none configured), the page with it, as a bearer
// token or a browser's basic password.
func TestDashboardBeyondLoopback(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := spillwayBin(t)
	const keys = "gateway:\n  keys:\n    - { name: ci, key: env:SPILLWAY_TEST_KEY }\n"
	for _, tc := range []struct {
		name, extra string
		admin       bool
	}{
		{"an admin key set", "  admin_key: env:SPILLWAY_TEST_ADMIN\n", true},
		{"no admin key set", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := startServe(t, bin, dir, "providers:\n  openai: { base_url: \"http://127.0.0.1:9/v1\" }\n"+keys+tc.extra,
				"--listen", "0.0.0.0:0", "--events", "-")
			base = strings.Replace(base, "0.0.0.0", "127.0.0.1", 1)
			for _, path := range []string{"/", "/ui/", "/ui/state", "/ui/events", "/spillway/status"} {
				for _, cred := range []struct {
					name string
					set  func(*http.Request)
					ok   bool
				}{
					{"none", func(*http.Request) {}, false},
					{"a gateway key", func(r *http.Request) { r.Header.Set("Authorization", "Bearer gw-0123456789") }, false},
					{"the admin key", func(r *http.Request) { r.Header.Set("Authorization", "Bearer adm-0123456789") }, tc.admin},
					{"the admin key as a basic password", func(r *http.Request) { r.SetBasicAuth("me", "adm-0123456789") }, tc.admin},
				} {
					ctx, cancel := context.WithCancel(context.Background())
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
					cred.set(req)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						cancel()
						t.Fatal(err)
					}
					resp.Body.Close()
					cancel()
					want := http.StatusUnauthorized
					if cred.ok {
						want = http.StatusOK
					}
					if resp.StatusCode != want {
						t.Errorf("GET %s with %s: %d, want %d", path, cred.name, resp.StatusCode, want)
					}
					if resp.StatusCode == http.StatusUnauthorized && tc.admin && resp.Header.Get("WWW-Authenticate") == "" {
						t.Errorf("GET %s: a 401 without WWW-Authenticate: a browser would not ask for the key", path)
					}
				}
			}
			if tc.admin {
				pagesPerAddress(t, base)
			}
			// other paths keep the provider-shaped 404
			resp, err := http.Get(base + "/nothing/here")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"error"`) {
				t.Errorf("GET /nothing/here: %d %s; want the provider-shaped 404", resp.StatusCode, b)
			}
		})
	}
}

// pagesPerAddress checks the dashboard's streams beyond loopback: four
// open from one address, a fifth from it refused (503), one from another
// address still served (neither is 127.0.0.1, whose streams of the test
// before may still be going).
func pagesPerAddress(t *testing.T, base string) {
	t.Helper()
	open := func(from string) int {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ui/events", nil)
		req.Header.Set("Authorization", "Bearer adm-0123456789")
		resp, err := c.Do(req)
		if err != nil {
			t.Skipf("cannot connect from %s here: %v", from, err)
		}
		t.Cleanup(func() { resp.Body.Close() }) // the stream stays open to the end of the test
		return resp.StatusCode
	}
	for i := range 4 {
		if code := open("127.0.0.3"); code != http.StatusOK {
			t.Fatalf("stream %d from one address: %d", i+1, code)
		}
	}
	if code := open("127.0.0.3"); code != http.StatusServiceUnavailable {
		t.Fatalf("a fifth stream from one address: %d, want 503", code)
	}
	if code := open("127.0.0.2"); code != http.StatusOK {
		t.Fatalf("a stream from another address: %d, want 200", code)
	}
}
