package gateway_test

// Issue 49's proof: the real Claude Code in its Bedrock and Vertex AI
// modes, pointed at the gateway, runs a real Bash tool loop on
// claude-sonnet-5-5 while the model's pools fill one after another
// (Bedrock us-east-1, Bedrock us-west-2, Vertex AI), and the next pool
// answers, down to Anthropic's own API; with every pool full it prints
// spillway's words once, without retrying. The gateway signs upstream
// with its own cloud credentials (the simulator checks them, as in
// clouds_test.go); a gateway key the client sends never goes further.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// cloudsFirst orders claude-sonnet-5-5's pools as a team that pays for
// its clouds would: Bedrock us-east-1, Bedrock us-west-2, Vertex AI, and
// Anthropic's own API last (the weights make the order certain). A cloud
// client sends no vendor key: the Anthropic API step goes with spillway's
// own (spillTo's), its auth passthrough as by default.
func cloudsFirst(c *config.Config) {
	m := c.Models[cloudModel]
	m.Deployments = []config.Deployment{
		{Name: "bedrock-east", Provider: "bedrock-east", Upstream: bedrockProfile, Weight: 1_000_000},
		{Name: "bedrock-west", Provider: "bedrock-west", Upstream: bedrockARN, Weight: 100},
		{Name: "vertex", Provider: "vertex-global", Upstream: vertexClaude, Weight: 10},
		{Name: "anthropic", Provider: "anthropic", Weight: 1},
	}
	c.Models[cloudModel] = m
}

// sonnetPool is one of claude-sonnet-5-5's pools in cloudsFirst's order:
// its deployment, the simulator serving it and the pool's name there, and
// the credential it is sent with ("": a Google access token).
type sonnetPool struct {
	deployment string
	srv        func(*cloudRig) *sim.Server
	pool       string
	credential string
}

var sonnetPools = []sonnetPool{
	{"bedrock-east", func(cr *cloudRig) *sim.Server { return cr.sim.Region("us-east-1") }, "bedrock/" + cloudModel, cloudKeyID},
	{"bedrock-west", func(cr *cloudRig) *sim.Server { return cr.sim.Region("us-west-2") }, "bedrock/" + cloudModel, cloudBedrockKey},
	{"vertex", func(cr *cloudRig) *sim.Server { return cr.sim }, "vertex/" + cloudModel, ""},
	{"anthropic", func(cr *cloudRig) *sim.Server { return cr.sim }, cloudModel, ownKeys["anthropic"]},
}

func (p sonnetPool) stats(cr *cloudRig) sim.ModelStats {
	if st := p.srv(cr).Snapshot().Models[p.pool]; st != nil {
		return *st
	}
	return sim.ModelStats{}
}

// servedAtLeast is the pool's stats once it has served n answers (waited
// for as poolServed does: the simulator counts an answer after its last
// write, which the client may have read already).
func (p sonnetPool) servedAtLeast(t testing.TB, cr *cloudRig, n int) sim.ModelStats {
	if st := servedStats(t, p.srv(cr), p.pool, n); st != nil {
		return *st
	}
	return sim.ModelStats{}
}

// recordsSince are the records from the n-th on, once want of them are
// answers on endpoint (waited for on waitCtx(t): the gateway records a
// stream once it has relayed its end).
func recordsSince(t testing.TB, cr *cloudRig, n, want int, endpoint string) []events.Record {
	return cr.waitRecords(t, func(recs []events.Record) bool {
		oks := 0
		for _, rec := range recs[n:] {
			if rec.Class == "ok" && rec.Endpoint == endpoint {
				oks++
			}
		}
		return oks >= want
	})[n:]
}

// fill makes the pool full until the test ends.
func (p sonnetPool) fill(t *testing.T, cr *cloudRig) {
	t.Helper()
	if err := p.srv(cr).AddFault(sim.Fault{Model: p.pool, Kind: "capacity", Count: -1}); err != nil {
		t.Fatal(err)
	}
}

// claudeCloudModes are Claude Code's cloud modes: the records' endpoint of
// its turns, and the content type of a turn's answer.
var claudeCloudModes = []struct {
	cloud, turns, answer string
}{
	{clienttest.Bedrock, "/bedrock/model/{model}/invoke-with-response-stream", "application/vnd.amazon.eventstream"},
	{clienttest.Vertex, "/vertex/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict", "text/event-stream"},
}

// clientCall is one request of Claude Code's and the answer it got, as
// it saw them.
type clientCall struct {
	method, path string
	status       int
	header       http.Header
	body         string // an error's
}

// clientSide stands between Claude Code and the gateway (a reverse proxy
// that flushes at once) and notes every request and answer.
type clientSide struct {
	mu    sync.Mutex
	calls []clientCall
}

// newClientSide returns the notes and the URL to point the client at.
func newClientSide(t *testing.T, gateway string) (*clientSide, string) {
	t.Helper()
	u, err := url.Parse(gateway)
	if err != nil {
		t.Fatal(err)
	}
	cs := &clientSide{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		c := clientCall{method: resp.Request.Method, path: resp.Request.URL.Path, status: resp.StatusCode, header: resp.Header.Clone()}
		if resp.StatusCode >= 400 {
			// an error's body, kept (up to 64 KiB) and sent on
			b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if err != nil {
				return err
			}
			c.body = string(b)
			resp.Body = io.NopCloser(bytes.NewReader(b))
		}
		cs.mu.Lock()
		cs.calls = append(cs.calls, c)
		cs.mu.Unlock()
		return nil
	}
	hs := httptest.NewServer(rp)
	t.Cleanup(hs.Close)
	return cs, hs.URL
}

// since is the calls from the n-th on.
func (cs *clientSide) since(n int) []clientCall {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]clientCall(nil), cs.calls[n:]...)
}

func (cs *clientSide) len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.calls)
}

// upstreamWatch is the gateway's transport: it keeps every request the
// gateway sent upstream (its path, headers and body) to look for what
// must never go there.
type upstreamWatch struct {
	mu   sync.Mutex
	sent bytes.Buffer
}

func (u *upstreamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	u.mu.Lock()
	u.sent.WriteString(req.Method + " " + req.URL.String() + "\n")
	req.Header.Write(&u.sent)
	u.sent.Write(body)
	u.sent.WriteString("\n\n")
	u.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// holds reports whether s was in any request sent upstream, and how many
// bytes were sent in all.
func (u *upstreamWatch) holds(s string) (bool, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Contains(u.sent.String(), s), u.sent.Len()
}

// addShellScript makes every pool of claude-sonnet-5-5 answer with
// simtest.ShellScript: the Bedrock regions' (each simulator's every model),
// Vertex AI's and the Anthropic API's.
func addShellScript(t *testing.T, cr *cloudRig) {
	t.Helper()
	for _, srv := range []*sim.Server{cr.sim.Region("us-east-1"), cr.sim.Region("us-west-2")} {
		if err := srv.AddScript(simtest.ShellScript()); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"vertex/" + cloudModel, cloudModel} {
		sc := simtest.ShellScript()
		sc.Model = m
		if err := cr.sim.AddScript(sc); err != nil {
			t.Fatal(err)
		}
	}
}

// runClaudeCloud runs Claude Code in cloud mode at base (the gateway, or
// a clientSide before it) on claude-sonnet-5-5 with the Bash tool allowed,
// CLAUDE_CODE_MAX_RETRIES maxRetries, and key its gateway key ("": none).
func runClaudeCloud(t *testing.T, base, cloud, key string, maxRetries int) clienttest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: base, Cloud: cloud, Model: cloudModel, APIKey: key,
		Prompt: "Run the command and tell me what it printed", MaxRetries: &maxRetries, ExtraArgs: []string{"--allowedTools", "Bash"}})
}

// loopDone fails t unless Claude Code finished the tool loop: exit 0, its
// answer quoting what the command printed.
func loopDone(t *testing.T, res clienttest.Result) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the scripted answer quoting the command's output\nstderr: %s", res.Stdout, res.Stderr)
	}
}

// Claude Code in its Bedrock and its Vertex AI mode runs a Bash tool loop
// through the gateway on claude-sonnet-5-5, whose pools fill step by
// step: with nothing full Bedrock us-east-1 answers; with it full,
// us-west-2; with both Bedrock regions full, Vertex AI; with both clouds
// full, Anthropic's own API. Each time the answering pool serves the call
// and the turn with the tool's result (streamed, each once), each with
// spillway's own credential for it; the records and routes name each full
// pool and the one that answered; Bedrock mode's answers are AWS event
// streams. (Claude Code sends its first request of a conversation with a
// role:system entry but, in a cloud mode, without the beta that allows it:
// the pool refuses it, and Claude Code sends it again without the entry,
// as it is built to.) With every pool of the chain full, Claude Code prints
// spillway's words (Bedrock's ServiceUnavailableException, Vertex AI's
// RESOURCE_EXHAUSTED) after one request: X-Should-Retry: false holds it
// back from its own retries.
func TestClaudeCodeCloudModesSpill(t *testing.T) {
	clienttest.Claude(t)
	for _, mode := range claudeCloudModes {
		t.Run(mode.cloud, func(t *testing.T) {
			cr := newCloudRigWith(t, cloudsFirst, nil)
			addShellScript(t, cr)
			cs, base := newClientSide(t, cr.url)
			for i, answering := range sonnetPools {
				full := sonnetPools[:i]
				name := "nothing full"
				if i > 0 {
					sonnetPools[i-1].fill(t, cr)
					var names []string
					for _, p := range full {
						names = append(names, p.deployment)
					}
					name = strings.Join(names, "+") + " full"
				}
				t.Run(name, func(t *testing.T) {
					before, fullBefore := answering.stats(cr), make([]sim.ModelStats, len(full))
					for j, p := range full {
						fullBefore[j] = p.stats(cr)
					}
					nrec, ncall := len(cr.records()), cs.len()
					loopDone(t, runClaudeCloud(t, base, mode.cloud, "", 0))

					// what Claude Code got: the call and the turn with the
					// tool's result, each answered in its cloud's stream
					// (an AWS event stream from Bedrock); before them, at
					// most one refusal of its role:system entry (sent
					// without the per-turn-control beta in a cloud mode:
					// the pool refuses it, and Claude Code sends the
					// request again without it)
					var hops []string
					for _, p := range full {
						hops = append(hops, cloudModel+"@"+p.deployment+":capacity")
					}
					wantRoute := strings.Join(append(hops, cloudModel+"@"+answering.deployment+":ok"), " > ")
					posts, turns := 0, 0
					for _, c := range cs.since(ncall) {
						if c.method != http.MethodPost {
							continue
						}
						posts++
						route := c.header.Get("X-Spillway-Route")
						if c.status != 200 {
							if c.status != 400 || turns > 0 || posts > 1 || route != strings.TrimSuffix(wantRoute, ":ok")+":bad_request" {
								t.Errorf("%s: %d (route %q), want 200, or a first 400 of %s", c.path, c.status, route, answering.deployment)
							}
							continue
						}
						turns++
						if ct := c.header.Get("Content-Type"); !strings.HasPrefix(ct, mode.answer) {
							t.Errorf("%s: content type %q, want %s", c.path, ct, mode.answer)
						}
						if want := strings.TrimSuffix(wantRoute, ":ok") + ":streaming"; route != want {
							t.Errorf("%s: X-Spillway-Route %q, want %q", c.path, route, want)
						}
					}
					if turns != 2 {
						t.Errorf("Claude Code's model calls: %d answered of %d, want 2 answered", turns, posts)
					}

					// the answering pool served the call and the answer to
					// its result, each once and streamed, with spillway's
					// own credential; each full pool refused each request
					after := answering.servedAtLeast(t, cr, before.Served+2)
					if after.Served-before.Served != 2 || after.Streamed-before.Streamed != 2 || after.Received-before.Received != posts {
						t.Errorf("%s served %d, streamed %d, received %d: want the call and the answer, each streamed once, of %d requests",
							answering.deployment, after.Served-before.Served, after.Streamed-before.Streamed, after.Received-before.Received, posts)
					}
					if fp := sim.Fingerprint(answering.credential, ""); answering.credential != "" && after.Credentials[fp]-before.Credentials[fp] != posts {
						t.Errorf("%s's credentials %v: want spillway's own for every request", answering.deployment, after.Credentials)
					}
					for j, p := range full {
						if st := p.stats(cr); st.Served != fullBefore[j].Served || st.Received-fullBefore[j].Received != posts {
							t.Errorf("%s (full) received %d and served %d: want each of %d requests refused there once", p.deployment,
								st.Received-fullBefore[j].Received, st.Served-fullBefore[j].Served, posts)
						}
					}

					// the records: each request tried the full pools in
					// order, then the answering one
					oks, badRequests, refused := 0, 0, map[string]int{}
					for _, rec := range recordsSince(t, cr, nrec, 2, mode.turns) {
						if rec.Endpoint != mode.turns || rec.Model != cloudModel {
							t.Errorf("a record of another request: %s %s at %s: %s", rec.Endpoint, rec.Model, rec.Deployment, rec.Class)
							continue
						}
						switch {
						case rec.Class == "ok" && rec.Deployment == answering.deployment:
							oks++
							if rec.Route != wantRoute || !rec.Stream {
								t.Errorf("the answer's record: route %q (want %q), stream %v", rec.Route, wantRoute, rec.Stream)
							}
						case rec.Class == "bad_request" && rec.Deployment == answering.deployment && strings.Contains(rec.Error, "role"):
							badRequests++
						case rec.Class == "capacity":
							refused[rec.Deployment]++
						default:
							t.Errorf("unexpected attempt %s@%s:%s (%s)", rec.Model, rec.Deployment, rec.Class, rec.Error)
						}
					}
					if oks != 2 || badRequests != posts-2 {
						t.Errorf("%d answers and %d refused role:system entries recorded at %s, want 2 and %d", oks, badRequests, answering.deployment, posts-2)
					}
					for _, p := range full {
						if refused[p.deployment] != posts {
							t.Errorf("%s's capacity refusals recorded: %d, want %d (%v)", p.deployment, refused[p.deployment], posts, refused)
						}
					}
					if len(refused) != len(full) {
						t.Errorf("capacity refusals recorded at %v, want those of the %d full pools", refused, len(full))
					}
				})
			}

			t.Run("all full", func(t *testing.T) {
				sonnetPools[len(sonnetPools)-1].fill(t, cr)
				cr.fault(t, sim.Fault{Model: "claude-haiku-5-5", Kind: "capacity", Count: -1}) // the chain's next model
				nrec, ncall := len(cr.records()), cs.len()
				res := runClaudeCloud(t, base, mode.cloud, "", 2)
				out := res.Stdout + res.Stderr
				if res.ExitCode == 0 || !strings.Contains(out, "spillway: ") {
					t.Fatalf("exit %d: Claude Code did not show spillway's words:\n%s", res.ExitCode, out)
				}
				for _, p := range sonnetPools {
					if want := cloudModel + "@" + p.deployment + " (capacity)"; !strings.Contains(out, want) {
						t.Errorf("Claude Code's words do not name %s, which was tried:\n%s", want, out)
					}
				}
				if !strings.Contains(out, "claude-haiku-5-5") {
					t.Errorf("Claude Code's words do not name claude-haiku-5-5, which was tried:\n%s", out)
				}
				var posts []clientCall
				for _, c := range cs.since(ncall) {
					if c.method == http.MethodPost {
						posts = append(posts, c)
					}
				}
				if len(posts) != 1 {
					t.Fatalf("Claude Code sent %d model calls, want 1 (X-Should-Retry: false): %+v", len(posts), posts)
				}
				c := posts[0]
				if c.header.Get("X-Should-Retry") != "false" {
					t.Errorf("the give-up answer's X-Should-Retry %q", c.header.Get("X-Should-Retry"))
				}
				// the give-up in the cloud's own shape
				var shape struct {
					Message string
					Error   struct {
						Code            int
						Message, Status string
					}
				}
				if err := json.Unmarshal([]byte(c.body), &shape); err != nil {
					t.Errorf("the give-up's body %q: %v", c.body, err)
				}
				switch mode.cloud {
				case clienttest.Bedrock:
					if c.status != 503 || c.header.Get("X-Amzn-Errortype") != "ServiceUnavailableException" || !strings.HasPrefix(shape.Message, "spillway: ") {
						t.Errorf("Bedrock's give-up: %d %v %s, want 503 ServiceUnavailableException {\"message\": \"spillway: …\"}", c.status, c.header, c.body)
					}
				case clienttest.Vertex:
					if c.status != 429 || shape.Error.Code != 429 || shape.Error.Status != "RESOURCE_EXHAUSTED" || !strings.HasPrefix(shape.Error.Message, "spillway: ") {
						t.Errorf("Vertex AI's give-up: %d %s, want 429 {\"error\": {\"code\": 429, \"status\": \"RESOURCE_EXHAUSTED\", \"message\": \"spillway: …\"}}", c.status, c.body)
					}
				}
				tried := map[string]bool{}
				for _, rec := range cr.records()[nrec:] {
					tried[rec.Model+"@"+rec.Deployment+":"+rec.Class] = true
				}
				for _, p := range sonnetPools {
					if !tried[cloudModel+"@"+p.deployment+":capacity"] {
						t.Errorf("no record of %s full: %v", p.deployment, tried)
					}
				}
			})
		})
	}
}

// gatewayKeyed makes claude-sonnet-5-5 cloudsFirst's and the gateway
// ask for a key: every vendor's provider sends its own key.
func gatewayKeyed(key string) func(*config.Config) {
	return func(c *config.Config) {
		cloudsFirst(c)
		for name, p := range c.Providers {
			if p.Cloud() != "" {
				continue
			}
			p.Auth = config.AuthKey
			if p.APIKey.Value == "" {
				p.APIKey = config.Secret{Ref: "env:OWN_KEY", Value: "sk-own-" + name + "-0123456789"}
			}
			c.Providers[name] = p
		}
		c.Gateway.Keys = []config.GatewayKey{{Name: "cloud-team", Hash: config.KeyHash(key)}}
	}
}

// On a gateway with gateway.keys, Claude Code in Bedrock mode sends its
// key as AWS_BEARER_TOKEN_BEDROCK and in Vertex AI mode as
// ANTHROPIC_CUSTOM_HEADERS' Authorization: the right key runs the tool
// loop on Bedrock us-east-1 (signed with spillway's AWS credentials); a
// wrong one is refused in spillway's words, and nothing reaches a pool.
// Neither key reaches the simulator.
func TestClaudeCodeCloudModesGatewayKey(t *testing.T) {
	clienttest.Claude(t)
	const key, wrong = "sk-spillway-cloudkey-0123456789", "sk-spillway-wrongkey-9876543210"
	up := &upstreamWatch{}
	cr := newCloudRigWith(t, gatewayKeyed(key), func(o *gateway.Options) { o.Transport = up })
	addShellScript(t, cr)
	cs, base := newClientSide(t, cr.url)
	east := sonnetPools[0]
	for _, mode := range claudeCloudModes {
		t.Run(mode.cloud+" key", func(t *testing.T) {
			before, nrec := east.stats(cr), len(cr.records())
			loopDone(t, runClaudeCloud(t, base, mode.cloud, key, 0))
			if after := east.servedAtLeast(t, cr, before.Served+2); after.Served-before.Served != 2 {
				t.Errorf("bedrock-east served %d turns, want 2", after.Served-before.Served)
			}
			oks := 0
			for _, rec := range recordsSince(t, cr, nrec, 2, mode.turns) {
				if rec.Endpoint == mode.turns && rec.Class == "ok" && rec.Deployment == "bedrock-east" {
					oks++
				}
			}
			if oks != 2 {
				t.Errorf("%d answers of the turns recorded at bedrock-east, want 2", oks)
			}
		})
		t.Run(mode.cloud+" wrong key", func(t *testing.T) {
			before, nrec, ncall := east.stats(cr), len(cr.records()), cs.len()
			res := runClaudeCloud(t, base, mode.cloud, wrong, 0)
			out := res.Stdout + res.Stderr
			hint := map[string]string{clienttest.Bedrock: "AWS_BEARER_TOKEN_BEDROCK", clienttest.Vertex: "ANTHROPIC_CUSTOM_HEADERS"}[mode.cloud]
			if res.ExitCode == 0 || !strings.Contains(out, "spillway: ") || !strings.Contains(out, "gateway key") || !strings.Contains(out, hint) {
				t.Fatalf("exit %d: Claude Code did not print spillway's refusal, saying where the key goes (%s):\n%s", res.ExitCode, hint, out)
			}
			if after := east.stats(cr); after.Received != before.Received {
				t.Errorf("a request with a wrong key reached Bedrock us-east-1")
			}
			if recs := cr.records()[nrec:]; len(recs) != 0 {
				t.Errorf("a request with a wrong key was sent upstream: %+v", recs[0])
			}
			refused := 0
			for _, c := range cs.since(ncall) {
				if c.status == 401 || c.status == 403 {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("no request of Claude Code's was refused: %+v", cs.since(ncall))
			}
		})
	}
	cr.mu.Lock()
	logs := cr.logs.String()
	cr.mu.Unlock()
	for what, s := range map[string]string{"the gateway key": key, "the wrong key": wrong} {
		if has, n := up.holds(s); has || n == 0 {
			t.Errorf("%s reached the simulator (%d bytes sent upstream)", what, n)
		}
		if strings.Contains(logs, s) {
			t.Errorf("the gateway's log holds %s", what)
		}
	}
	// Bedrock us-east-1 saw spillway's AWS credentials only
	if st := east.stats(cr); len(st.Credentials) != 1 || st.Credentials[sim.Fingerprint(cloudKeyID, "")] == 0 {
		t.Errorf("bedrock-east's credentials %v: want spillway's AWS access key only", st.Credentials)
	}
}
