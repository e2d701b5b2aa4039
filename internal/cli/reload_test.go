package cli

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/spillway/spillway/sim"
)

// SIGHUP reloads: a changed configuration serves at once and the breakers
// of the deployments that remain keep their state; an invalid one is
// refused with its errors and the old one keeps serving. POST
// /spillway/reload does the same with the admin key, and refuses without.
func TestReload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := spillwayBin(t)
	scn, _ := sim.Builtin("calm")
	srv, _ := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "spillway.yaml")
	write := func(extra string) {
		body := "providers:\n  openai: { base_url: \"" + hs.URL + "/v1\" }\n  anthropic: { base_url: \"" + hs.URL + "\" }\n  gemini: { base_url: \"" + hs.URL + "\" }\n" +
			"breaker: { failures: 2, window: 1m, cooldown: 10m, max_cooldown: 10m }\ngateway: { admin_key: env:SPILLWAY_TEST_ADMIN }\n" + extra
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--events", "-")
	cmd.Env = append(os.Environ(), "HOME="+dir, "SPILLWAY_TEST_ADMIN=adm-0123456789")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	sc.Scan()
	m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("banner: %q", sc.Text())
	}
	base := "http://" + m[1]
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	status := func() (chains map[string][]string, breakers map[string]string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/spillway/status", nil)
		req.Header.Set("X-Spillway-Admin-Key", "adm-0123456789") // the admin key guards /spillway/*
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Chains   map[string][]string `json:"chains"`
			Breakers map[string]string   `json:"breakers"`
		}
		json.NewDecoder(resp.Body).Decode(&st)
		return st.Chains, st.Breakers
	}
	ask := func() int {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-reload-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// gpt-6-astra's breaker opens
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 2})
	ask()
	ask()
	openKey := ""
	_, br := status()
	for k, v := range br {
		if strings.Contains(k, "gpt-6-astra") && v == "open" {
			openKey = k
		}
	}
	if openKey == "" {
		t.Fatalf("astra's breaker did not open: %v", br)
	}
	waitFor := func(what string, ok func() bool) {
		for deadline := time.Now().Add(20 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				mu.Lock()
				t.Fatalf("%s: not within 20 s; log:\n%s", what, log.String())
			}
			time.Sleep(20 * time.Millisecond) // waiting for another process: polling, not timing
		}
	}
	// a changed configuration
	write("chains:\n  extra: [gpt-5.5]\n")
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor("the new chain", func() bool { ch, _ := status(); return ch["extra"] != nil })
	if _, br := status(); br[openKey] != "open" {
		t.Fatalf("the breaker's state was lost on reload: %v", br)
	}
	// an invalid one: refused, the old keeps serving
	os.WriteFile(cfgPath, []byte("providers: [this is not a map\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor("the refusal in the log", func() bool { mu.Lock(); defer mu.Unlock(); return strings.Contains(log.String(), "reload refused") })
	if ch, _ := status(); ch["extra"] == nil || ask() != 200 {
		t.Fatal("the old configuration stopped serving after a refused reload")
	}
	mu.Lock()
	refused := log.String()
	mu.Unlock()
	if !strings.Contains(refused, "spillway.yaml") {
		t.Fatalf("the refusal does not name the file:\n%s", refused)
	}
	// over HTTP: the admin key
	write("chains:\n  other: [gpt-5.6-luna]\n")
	post := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/spillway/reload", nil)
		if basic, ok := strings.CutPrefix(key, "basic:"); ok {
			req.SetBasicAuth("me", basic)
		} else if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(""); code != 401 {
		t.Fatalf("reload without the admin key: %d", code)
	}
	if code := post("wrong"); code != 401 {
		t.Fatalf("reload with a wrong key: %d", code)
	}
	// a browser sends a basic password it was given for the dashboard on
	// its own, with a form another site posts too: not for a reload
	if code := post("basic:adm-0123456789"); code != 401 {
		t.Fatalf("reload with the admin key as a basic password: %d", code)
	}
	if code := post("adm-0123456789"); code != 200 {
		t.Fatalf("reload with the admin key: %d", code)
	}
	if ch, _ := status(); ch["other"] == nil {
		t.Fatal("POST /spillway/reload did not reload")
	}
	// a change a reload cannot apply is said in the answer, not only the log
	write("chains:\n  other: [gpt-5.6-luna]\nstate: redis://127.0.0.1:1/0\n")
	req, _ := http.NewRequest(http.MethodPost, base+"/spillway/reload", nil)
	req.Header.Set("Authorization", "Bearer adm-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Reloaded bool     `json:"reloaded"`
		Ignored  []string `json:"ignored"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if want := `state: "redis://127.0.0.1:1/0", still serving "memory"; it takes a restart`; !answer.Reloaded || len(answer.Ignored) != 1 || answer.Ignored[0] != want {
		t.Fatalf("reload's answer %+v; want ignored [%s]", answer, want)
	}
	mu.Lock()
	if strings.Contains(log.String(), "adm-0123456789") {
		t.Fatal("the admin key reached the log")
	}
	mu.Unlock()
	// an empty file (or only comments), or none: refused, not taken as
	// "all defaults" (the providers back to the public APIs, the admin
	// key gone)
	for _, c := range []struct {
		name, says string
		make       func()
	}{
		{"only comments", "holds no setting", func() { os.WriteFile(cfgPath, []byte("# nothing here yet\n\n"), 0o600) }},
		{"empty", "holds no setting", func() { os.WriteFile(cfgPath, nil, 0o600) }},
		{"gone", "no such file", func() { os.Remove(cfgPath) }},
	} {
		c.make()
		if code := post("adm-0123456789"); code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: reload %d, want it refused (422)", c.name, code)
		}
		cmd.Process.Signal(syscall.SIGHUP)
		waitFor(c.name+": the refusal in the log", func() bool { mu.Lock(); defer mu.Unlock(); return strings.Count(log.String(), c.says) >= 2 })
		if ch, _ := status(); ch["other"] == nil || ask() != 200 {
			t.Fatalf("%s: the old configuration stopped serving", c.name)
		}
		mu.Lock()
		log.Reset()
		mu.Unlock()
	}
}
