package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSimCommandServes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	app := &App{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"sim", "--listen", "127.0.0.1:0", "--scenario", "peak", "--clock", "fast:60", "--token-rate", "0"})
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	second, _ := br.ReadString('\n')
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, "scenario peak, clock fast:60 at 2026-11-25T11:0") {
		t.Fatalf("banner: %q", line)
	}
	// every format it speaks, Gemini's too
	addr := strings.TrimPrefix(m[1], "http://")
	if want := "  OpenAI base URL http://" + addr + "/v1, Anthropic and Gemini base URL http://" + addr + "; any key works unless the scenario names it\n"; second != want {
		t.Fatalf("banner's second line %q, want %q", second, want)
	}
	resp, err := http.Get(m[1] + "/_sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Scenario string    `json:"scenario"`
		Clock    time.Time `json:"clock"`
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Scenario != "peak" || st.Clock.Before(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)) {
		t.Fatalf("stats: %+v", st)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim did not stop on cancel")
	}
}

func TestSimCommandBadFlags(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"unknown scenario": {"sim", "--scenario", "tsunami"},
		"bad clock":        {"sim", "--clock", "fast:zero"},
		"bad start":        {"sim", "--start", "tomorrow"},
	}
	for name, args := range cases {
		_, errOut, code := run(t, nil, "", args...)
		if code != ExitUsage || errOut == "" {
			t.Errorf("%s: exit %d %q", name, code, errOut)
		}
	}
	// a scenario file that fails is 1, said as config check says it:
	// every problem at once, file:line:column, the field, what is allowed;
	// one that is not there is 1 too
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(typo, []byte("models:\n  gpt-6-astra:\n    capacty: 3\n"), 0o600)
	every := "../../testdata/sim/every_mistake.yaml"
	for _, c := range []struct{ file, want string }{
		{every, every + `:3:8: noise: must be a number, not "lots"
` + every + `:5:18: tiers.heavy.pool: must be at least 1, not 0
` + every + `:5:21: tiers.heavy.peak_loud: unknown field "peak_loud"; allowed here: peak_load, pool, quiet_load
` + every + `:6:33: tiers.medium.peak_load: must be a fraction from 0 to 1, not 1.5
` + every + `:9:10: outages[0].for: must be more than 0s
` + every + `:11:18: keys.sk-x.state: unknown state "broke"; allowed: ok, quota, invalid
spillway: 6 problems in ` + every + "\n"},
		{typo, typo + `:3:5: models.gpt-6-astra.capacty: unknown field "capacty"; allowed here: peak_load, pool, quiet_load
spillway: 1 problem in ` + typo + "\n"},
		{filepath.Join(dir, "missing.yaml"), "spillway: sim: scenario: open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory\n"},
	} {
		_, errOut, code := run(t, nil, "", "sim", "--scenario", c.file)
		if code != ExitFail || errOut != c.want {
			t.Errorf("%s: exit %d, stderr\n%s\nwant 1 and\n%s", c.file, code, errOut, c.want)
		}
	}
	// a port in use: which, and the fix
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, errOut, code := run(t, nil, "", "sim", "--listen", l.Addr().String())
	if want := l.Addr().String() + " is in use (another spillway sim, or another program): choose another address with --listen 127.0.0.1:PORT"; code != ExitFail || !strings.Contains(errOut, want) {
		t.Errorf("port in use: exit %d %q", code, errOut)
	}
}

// The demo's summary names every vendor's models in the simulator's
// rejections, and counts a request that started elsewhere for any reason
// its first choice could not take it (capacity, breaker, room taken) as
// finding it full, so that the two counts agree.
func TestDemoSummary(t *testing.T) {
	t.Parallel()
	out, errOut, code := run(t, map[string]string{"HOME": t.TempDir()}, "", "demo", "--requests", "12")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rej := regexp.MustCompile(`simulator capacity rejections \(rejected/received\): (.*)`).FindStringSubmatch(out)
	if rej == nil || !strings.Contains(rej[1], "gemini-3-pro ") || !strings.Contains(rej[1], "claude-opus-5-5 ") || !strings.Contains(rej[1], "gpt-6-astra ") {
		t.Fatalf("rejections: %q\n%s", rej, out)
	}
	fell := regexp.MustCompile(`(\d+) fell back`).FindStringSubmatch(out)
	full := regexp.MustCompile(`(\d+) of 12 requests found their first-choice model full \(at capacity, its breaker open or its reduced room taken\)`).FindStringSubmatch(out)
	if fell == nil || full == nil {
		t.Fatalf("summary:\n%s", out)
	}
	// every fallback in the demo is for room (no request outgrows a window)
	if fell[1] != full[1] {
		t.Fatalf("%s fell back, %s found their first choice full:\n%s", fell[1], full[1], out)
	}
}

// The demo one request at a time with the same seed gives the same routes
// and counts every time (the simulator's clock steps with its requests,
// the gateway's jitter comes from the seed, and a breaker holds through a
// run); only the times differ.
func TestDemoIsTheSameForASeed(t *testing.T) {
	t.Parallel()
	demo := func(seed string) string {
		out, errOut, code := run(t, map[string]string{"HOME": t.TempDir()}, "", "demo", "--requests", "15", "--concurrency", "1", "--seed", seed)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		// the times are the machine's
		out = regexp.MustCompile(` +\d+ms`).ReplaceAllString(out, "")
		return regexp.MustCompile(`(?m)^  latency .*\n`).ReplaceAllString(out, "")
	}
	first := demo("4")
	if !strings.Contains(first, "#15 ") || !strings.Contains(first, "summary: 15/15 answered") {
		t.Fatalf("the run:\n%s", first)
	}
	for range 2 {
		if again := demo("4"); again != first {
			t.Fatalf("the same seed, another run:\n%s\nthe first:\n%s", again, first)
		}
	}
}

// The cloud flags: the service account is written (its user's only, its
// token_uri the simulator's), the checks are said without a secret, and
// SigV4 is required once test credentials are given.
func TestSimCommandClouds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	app := &App{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw, Getenv: func(string) string { return "" }}
	saFile := filepath.Join(t.TempDir(), "sa.json")
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"sim", "--listen", "127.0.0.1:0", "--regions", "us-east-1", "--aws-credentials", "AKIDSIM:sim-secret-canary",
			"--gcp-service-account", saFile, "--token-lifetime", "90s"})
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	var banner strings.Builder
	for !strings.Contains(banner.String(), "Google service account written") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("banner %q: %v", banner.String(), err)
		}
		banner.WriteString(line)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(banner.String())
	if m == nil || strings.Contains(banner.String(), "sim-secret-canary") || !strings.Contains(banner.String(), "Bedrock requests SigV4-signed") {
		t.Fatalf("banner %q", banner.String())
	}
	info, err := os.Stat(saFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("service account file: %v %v", info, err)
	}
	var sa struct {
		Token string `json:"token_uri"`
		Type  string `json:"type"`
	}
	b, _ := os.ReadFile(saFile)
	if json.Unmarshal(b, &sa) != nil || sa.Token != m[1]+"/token" || sa.Type != "service_account" {
		t.Fatalf("service account %s", b)
	}
	// an unsigned Bedrock request is refused
	resp, err := http.Post(m[1]+"/us-east-1/model/anthropic.claude-sonnet-5-5-v1%3A0/invoke", "application/json",
		strings.NewReader(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("unsigned Bedrock request: %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	// bad cloud flags are usage errors that never repeat a secret
	for name, args := range map[string][]string{
		"no secret":      {"sim", "--aws-credentials", "AKIDONLY"},
		"empty key id":   {"sim", "--aws-credentials", ":secret-canary"},
		"token lifetime": {"sim", "--token-lifetime", "0s"},
	} {
		_, errOut, code := run(t, nil, "", args...)
		if code != ExitUsage || errOut == "" || strings.Contains(errOut, "canary") {
			t.Errorf("%s: exit %d %q", name, code, errOut)
		}
	}
}
