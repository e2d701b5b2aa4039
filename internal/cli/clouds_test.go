package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The clouds as docs/clouds.md and docs/simulator.md run them: `spillway
// sim` with two Bedrock regions, test AWS credentials and a service
// account, the cloud-pools scenario (the Anthropic API's
// claude-sonnet-5-5 full, and Bedrock's in us-east-1); `spillway serve`
// with testdata/config/good/clouds.yaml, its hosts the simulator's. A
// Messages request, whole and streamed, is answered by Bedrock us-west-2
// (its profile's credentials, as bedrock-east's come from the
// environment: the simulator verifies both signatures); gemini-3-pro full
// on the Gemini API, a Gemini request is answered by Vertex AI with the
// service account's token. No AWS secret, session token, private key or
// access token is in serve's log, its files, /metrics, the status, the
// dashboard's state or an answer.
func TestServeSpillsToTheCloudsAsTheDocsSay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const (
		keyID   = "AKIDCLICLOUD00000001"
		secret  = "CANARYcliAwsSecret9d8c7b6a5f4e"
		session = "CANARYcliAwsSession5e4d3c2b1a"
	)
	docs := docsClouds(t, keyID, secret, session)
	bin, dir, saFile, simURL, events := docs.bin, docs.dir, docs.saFile, docs.simURL, docs.events
	base, logs, stop := startServeStop(t, bin, dir, docs.config, "--listen", "127.0.0.1:0", "--events", events)

	var answers strings.Builder
	post := func(path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers.WriteString(resp.Header.Get("X-Spillway-Route") + "\n" + string(b) + "\n")
		return resp, string(b)
	}
	for _, stream := range []string{"false", "true"} {
		resp, got := post("/v1/messages", `{"model":"claude-sonnet-5-5","max_tokens":64,"stream":`+stream+`,"messages":[{"role":"user","content":"spill to bedrock"}]}`,
			"x-api-key", "sk-ant-api03-caller", "anthropic-version", "2023-06-01")
		route := resp.Header.Get("X-Spillway-Route")
		if resp.StatusCode != 200 || !strings.Contains(got, "[bedrock/claude-sonnet-5-5]") ||
			!strings.Contains(route, "claude-sonnet-5-5@bedrock-east:capacity") || !regexp.MustCompile(`claude-sonnet-5-5@bedrock-west:(ok|streaming)$`).MatchString(route) {
			t.Fatalf("stream %s: %d route %q\n%s", stream, resp.StatusCode, route, got)
		}
	}
	// gemini-3-pro full on the Gemini API: Vertex AI's answers
	fault, err := http.Post(simURL+"/_sim/faults", "application/json", strings.NewReader(`{"model":"gemini-3-pro","fault":"capacity","count":-1}`))
	if err != nil {
		t.Fatal(err)
	}
	fault.Body.Close()
	resp, got := post("/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"spill to vertex"}]}]}`, "x-goog-api-key", "AIza-caller")
	if resp.StatusCode != 200 || !strings.Contains(got, "[vertex/gemini-3-pro]") || resp.Header.Get("X-Spillway-Route") != "gemini-3-pro@gemini:capacity > gemini-3-pro@vertex:streaming" {
		t.Fatalf("gemini: %d %v\n%s", resp.StatusCode, resp.Header, got)
	}

	var sa struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	if b, err := os.ReadFile(saFile); err != nil || json.Unmarshal(b, &sa) != nil || sa.PrivateKeyID == "" {
		t.Fatalf("the service account: %v", err)
	}
	marks := map[string]string{"AWS secret key": secret, "AWS session token": session, "service account key id": sa.PrivateKeyID,
		"Google access token": "ya29.sim-"}
	for _, line := range strings.Split(sa.PrivateKey, "\n")[2:] {
		if len(line) == 64 {
			marks["service account private key"] = line
			break
		}
	}
	shown := map[string]string{"the answers": answers.String()}
	for _, path := range []string{"/metrics", "/spillway/status", "/ui/state"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		shown[path] = string(b)
	}
	// the gateway stopped (its requests finished, its event log flushed):
	// what it wrote is all there, and the records name the pools
	stop()
	shown["serve's log"] = logs()
	for ep, want := range map[string]string{"/v1/messages": "bedrock-west", "/v1beta/models/{model}:streamGenerateContent": "vertex"} {
		if !recordsName(t, events, ep, want) {
			t.Errorf("no ok record of %s names deployment %s", ep, want)
		}
	}
	if !strings.Contains(shown["/metrics"], "bedrock-west") {
		t.Errorf("/metrics names no Bedrock pool (so its scan proves little):\n%s", shown["/metrics"])
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Join(dir, "secrets")) {
			if b, err := os.ReadFile(p); err == nil {
				shown[p] = string(b)
			}
		}
		return nil
	})
	if shown[events] == "" {
		t.Fatal("no event log")
	}
	for where, text := range shown {
		for what, mark := range marks {
			if strings.Contains(text, mark) {
				t.Errorf("%s holds the %s", where, what)
			}
		}
	}
}

// recordsName reports whether an ok record of endpoint in the event log
// names deployment.
func recordsName(t *testing.T, events, endpoint, deployment string) bool {
	t.Helper()
	b, _ := os.ReadFile(events)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Endpoint, Class, Deployment string }
		json.Unmarshal([]byte(line), &rec)
		if rec.Endpoint == endpoint && rec.Class == "ok" && rec.Deployment == deployment {
			return true
		}
	}
	return false
}

// startCloudSim runs `spillway sim` with args in this process, listening
// on a free port, and returns its URL once the service account is
// written.
func startCloudSim(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	app := &App{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	br := bufio.NewReader(pr)
	var banner strings.Builder
	for !strings.Contains(banner.String(), "Google service account written") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("banner %q: %v", banner.String(), err)
		}
		banner.WriteString(line)
	}
	go io.Copy(io.Discard, br)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(banner.String())
	if m == nil {
		t.Fatalf("banner %q", banner.String())
	}
	return m[1]
}

// docsClouds is the setup of the docs' clouds: `spillway sim` with two
// Bedrock regions, the AWS credentials keyID:secret:session and a service
// account, the cloud-pools scenario; bedrock-west's profile "work" in AWS
// shared files; testdata/config/good/clouds.yaml with the simulator's
// hosts (config), an event log's path (events), and the environment
// serve reads its AWS credentials from.
type docsCloudSetup struct {
	bin, dir, saFile, simURL, config, events string
}

func docsClouds(t *testing.T, keyID, secret, session string) docsCloudSetup {
	t.Helper()
	d := docsCloudSetup{bin: spillwayBin(t), dir: t.TempDir()}
	d.saFile = filepath.Join(d.dir, "secrets", "sa.json")
	os.MkdirAll(filepath.Dir(d.saFile), 0o700)
	d.simURL = startCloudSim(t, "--scenario", "../../testdata/sim/cloud_pools.yaml", "--regions", "us-east-1,us-west-2",
		"--aws-credentials", keyID+":"+secret+":"+session, "--gcp-service-account", d.saFile)

	// bedrock-west's profile "work", in the AWS shared files
	awsDir := filepath.Join(d.dir, "secrets", "aws")
	os.MkdirAll(awsDir, 0o700)
	os.WriteFile(filepath.Join(awsDir, "config"), []byte("[profile work]\nregion = us-west-2\n"), 0o600)
	os.WriteFile(filepath.Join(awsDir, "credentials"), []byte("[work]\naws_access_key_id = "+keyID+"\naws_secret_access_key = "+secret+"\naws_session_token = "+session+"\n"), 0o600)

	var cfg map[string]any
	b, err := os.ReadFile("../../testdata/config/good/clouds.yaml")
	if err != nil || yaml.Unmarshal(b, &cfg) != nil {
		t.Fatalf("clouds.yaml: %v", err)
	}
	providers := cfg["providers"].(map[string]any)
	for name, base := range map[string]string{"anthropic": d.simURL, "gemini": d.simURL, "bedrock-east": d.simURL + "/us-east-1",
		"bedrock-west": d.simURL + "/us-west-2", "vertex-global": d.simURL} {
		p, _ := providers[name].(map[string]any)
		if p == nil {
			p = map[string]any{}
		}
		p["base_url"] = base
		if name == "vertex-global" {
			p["credentials_file"] = d.saFile
		}
		providers[name] = p
	}
	body, _ := yaml.Marshal(cfg)
	d.config = string(body)
	d.events = filepath.Join(d.dir, "state", "events.jsonl")
	os.MkdirAll(filepath.Dir(d.events), 0o700)
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", session)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(awsDir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(awsDir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	return d
}
