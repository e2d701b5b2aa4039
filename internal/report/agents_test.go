package report_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/report"
)

// fixtures are the agents' own files, written by the real clients against
// the simulator (testdata/report/agents/README.md says how).
func fixtures(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "report", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// place copies fixture files into an agent's layout under a new home.
func place(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	for from, to := range files {
		b, err := os.ReadFile(filepath.Join(fixtures(t), from))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(home, to)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

type want struct {
	model, class string
	at           string // RFC 3339 of the event
	first        bool
}

func TestAgentFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		only  string
		files map[string]string
		home  func(o *report.Options, home string)
		want  map[string]int // class → events
		model map[string]int // model → attempts
		hour  int            // the UTC hour every event is in
		size  bool           // the answered attempts have a size
	}{
		{
			name: "codex rollouts", only: "codex",
			files: map[string]string{
				"codex/rollout-ok.jsonl":                    "sessions/2026/11/30/rollout-a.jsonl",
				"codex/rollout-capacity.jsonl":              "sessions/2026/11/30/rollout-b.jsonl",
				"codex/rollout-capacity-503.jsonl":          "sessions/2026/11/30/rollout-c.jsonl",
				"codex/rollout-quota.jsonl":                 "archived_sessions/rollout-d.jsonl",
				"codex/rollout-rate-limit.jsonl":            "sessions/2026/11/30/rollout-e.jsonl",
				"codex/rollout-capacity-503-retries2.jsonl": "sessions/2026/11/30/rollout-f.jsonl",
			},
			home:  func(o *report.Options, h string) { o.CodexHome = h },
			want:  map[string]int{"ok": 1, "capacity": 3, "usage_limit": 1, "rate_limit": 1},
			model: map[string]int{"gpt-6-astra": 6},
			hour:  21, size: true,
		},
		{
			name: "claude code transcripts", only: "claude",
			files: map[string]string{
				"claude/transcript-ok.jsonl":         "projects/-work/ok.jsonl",
				"claude/transcript-capacity.jsonl":   "projects/-work/capacity.jsonl",
				"claude/transcript-rate-limit.jsonl": "projects/-work/rate.jsonl",
				"claude/transcript-quota.jsonl":      "projects/-other/quota.jsonl",
			},
			home: func(o *report.Options, h string) { o.ClaudeHome = h },
			// capacity: two retried 529s and the last word; rate limit:
			// two retried 429s and the last word; quota: the last word
			want:  map[string]int{"ok": 1, "capacity": 3, "rate_limit": 3, "quota": 1},
			model: map[string]int{"claude-opus-5-5": 8},
			hour:  21, size: true,
		},
		{
			name: "gemini cli sessions and error reports", only: "gemini",
			files: map[string]string{
				"gemini/session-ok.jsonl":       "tmp/work/chats/session-2026-11-30T21-16-e9fccaaf.jsonl",
				"gemini/session-capacity.jsonl": "tmp/work/chats/session-2026-11-30T21-16-b7220e82.jsonl",
				"gemini/session-quota.jsonl":    "tmp/other/chats/session-2026-11-30T21-19-f91e11f3.jsonl",
			},
			home: func(o *report.Options, h string) {
				o.GeminiHome = h
				// the error reports, named as Gemini CLI names them, a moment after each failed prompt
				tmp := place(t, map[string]string{
					"gemini/client-error-capacity.json": "gemini-client-error-Turn.run-sendMessageStream-2026-11-30T21-16-15-012Z.json",
					"gemini/client-error-quota.json":    "gemini-client-error-Turn.run-sendMessageStream-2026-11-30T21-19-47-100Z.json",
				})
				o.TempDir = tmp
			},
			want:  map[string]int{"ok": 1, "capacity": 1, "usage_limit": 1},
			model: map[string]int{"gemini-3-pro": 1, "(unknown)": 2},
			hour:  21,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := place(t, c.files)
			o := report.Options{Only: []string{c.only}, Loc: time.UTC}
			c.home(&o, home)
			r := build(t, o)
			got := map[string]int{}
			for _, m := range r.Models {
				for class, n := range m.Classes {
					got[class] += n
				}
			}
			for class, n := range c.want {
				if got[class] != n {
					t.Errorf("%s: %d, want %d (all: %v)", class, got[class], n, got)
				}
			}
			// a plan's usage limit has its own count, apart from billing quota
			if r.Totals.UsageLimit != c.want["usage_limit"] || r.Totals.Quota != c.want["quota"] {
				t.Errorf("totals: usage_limit %d quota %d, want %d and %d", r.Totals.UsageLimit, r.Totals.Quota, c.want["usage_limit"], c.want["quota"])
			}
			if r.Totals.Attempts != sum(c.want) {
				t.Errorf("attempts %d, want %d", r.Totals.Attempts, sum(c.want))
			}
			for _, m := range r.Models {
				if c.model[m.Model] != m.Attempts {
					t.Errorf("model %s: %d attempts, want %d", m.Model, m.Attempts, c.model[m.Model])
				}
			}
			// Monday 2026-11-30, 21:xx UTC: every event in that one cell
			if cell := r.Heatmap[0][c.hour]; cell.Attempts != r.Totals.Attempts || cell.Capacity != c.want["capacity"] {
				t.Errorf("Mon %02d:00 holds %+v, want all %d attempts and the %d capacity errors", c.hour, cell, r.Totals.Attempts, c.want["capacity"])
			}
			sized := 0
			for _, b := range r.Sizes {
				sized += b.Attempts
			}
			if c.size && sized == 0 {
				t.Error("no attempt has a request size")
			}
			for _, in := range r.Inputs {
				if in.Unreadable > 0 || in.Error != "" {
					t.Errorf("%s: %d unreadable lines, error %q", in.Path, in.Unreadable, in.Error)
				}
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Broken and foreign lines in an agent's file are counted, never fatal.
func TestAgentFilesWithBrokenLines(t *testing.T) {
	home := place(t, map[string]string{"codex/rollout-capacity.jsonl": "sessions/2026/11/30/rollout-a.jsonl"})
	p := filepath.Join(home, "sessions/2026/11/30/rollout-a.jsonl")
	b, _ := os.ReadFile(p)
	b = append([]byte("garbage line\n{\"timestamp\":\"x\",\"type\":\"event_msg\",\"payload\":{\"type\":\"task_complete\"\n"), b...)
	os.WriteFile(p, b, 0o600)
	r := build(t, report.Options{Only: []string{"codex"}, CodexHome: home})
	if r.Totals.Capacity != 1 || len(r.Inputs) != 1 || r.Inputs[0].Unreadable != 2 {
		t.Fatalf("capacity %d, inputs %+v: want the capacity failure and 2 unreadable lines", r.Totals.Capacity, r.Inputs)
	}
	if !strings.Contains(r.Inputs[0].Path, "rollout-a.jsonl") {
		t.Fatalf("input path %q", r.Inputs[0].Path)
	}
}

// Found in review: a retry sequence left unfinished (Esc) does not carry
// over to the next prompt; a message with a key is shown redacted.
func TestClaudeEdges(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "projects", "-w")
	os.MkdirAll(dir, 0o700)
	lines := strings.Join([]string{
		`{"type":"user","timestamp":"2026-11-30T10:00:00Z","message":{"role":"user","content":"first"}}`,
		`{"type":"api-request","timestamp":"2026-11-30T10:00:01Z","params":{"model":"claude-opus-5-5"}}`,
		`{"type":"system","subtype":"api_error","timestamp":"2026-11-30T10:00:02Z","error":{"status":529,"message":"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"},"retryInMs":500,"retryAttempt":1,"maxRetries":10}`,
		`{"type":"user","timestamp":"2026-11-30T10:05:00Z","message":{"role":"user","content":"second"}}`,
		`{"type":"api-request","timestamp":"2026-11-30T10:05:01Z","params":{"model":"claude-sonnet-5-5"}}`,
		`{"type":"assistant","timestamp":"2026-11-30T10:05:02Z","message":{"id":"m1","model":"claude-sonnet-5-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":100}}}`,
		`{"type":"assistant","timestamp":"2026-11-30T10:06:00Z","isApiErrorMessage":true,"apiErrorStatus":400,"apiErrorType":"invalid_request_error","error":"billing_error","message":{"id":"m2","model":"<synthetic>","content":[{"type":"text","text":"Credit balance is too low for sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"}],"usage":{"input_tokens":0}}}`,
	}, "\n")
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(lines+"\n"), 0o600)
	r := build(t, report.Options{Only: []string{"claude"}, ClaudeHome: home, Loc: time.UTC})
	m := modelStats(r, "claude-sonnet-5-5")
	if m == nil || m.Requests != 2 || m.Fallbacks != 0 || m.WaitMS != 0 {
		t.Fatalf("sonnet after an abandoned opus retry: %+v", m)
	}
	if r.QuotaN != 1 || strings.Contains(r.Quota[0].Message, "abcdefghijklmnop") {
		t.Fatalf("quota incidents %+v: want one, its key redacted", r.Quota)
	}
}

// A turn an agent made through the gateway is in its own file and in the
// gateway's event log: it is counted once, from the log. Codex names its
// provider (the one spillway setup codex writes); Claude Code and Gemini
// CLI name none, so their turns are matched to the log's requests by model
// and start within 2 s.
func TestAgentTurnsTheGatewayLoggedCountOnce(t *testing.T) {
	codex := place(t, map[string]string{"codex/rollout-ok.jsonl": "sessions/2026/11/30/rollout-a.jsonl"})
	claude := place(t, map[string]string{
		"claude/transcript-ok.jsonl":       "projects/-work/ok.jsonl",
		"claude/transcript-capacity.jsonl": "projects/-work/capacity.jsonl",
	})
	gemini := place(t, map[string]string{"gemini/session-ok.jsonl": "tmp/work/chats/session-2026-11-30T21-16-e9fccaaf.jsonl"})
	log := filepath.Join(t.TempDir(), "events.jsonl")
	at := func(s string) time.Time { ts, _ := time.Parse(time.RFC3339Nano, s); return ts }
	recs := []events.Record{
		// Codex's turn
		{TS: at("2026-11-30T21:15:30.100Z"), RequestID: "r1", Attempt: 1, Source: "gateway", Model: "gpt-6-astra", RequestedModel: "gpt-6-astra", Endpoint: "/v1/responses", Status: 200, Class: "ok"},
		// Claude Code's answered turn (its request at 21:15:55.522), and a
		// request 3 s from any of its failed ones
		{TS: at("2026-11-30T21:15:55.600Z"), RequestID: "r2", Attempt: 1, Source: "gateway", Model: "claude-opus-5-5", RequestedModel: "claude-opus-5-5", Endpoint: "/v1/messages", Status: 200, Class: "ok"},
		{TS: at("2026-11-30T21:16:03.500Z"), RequestID: "r3", Attempt: 1, Source: "gateway", Model: "claude-opus-5-5", RequestedModel: "claude-opus-5-5", Endpoint: "/v1/messages", Status: 200, Class: "ok"},
		// Gemini CLI's turn (its prompt at 21:16:08.946), answered by a fallback
		{TS: at("2026-11-30T21:16:09.010Z"), RequestID: "r4", Attempt: 1, Source: "gateway", Model: "gemini-3-pro", RequestedModel: "gemini-3-pro", Endpoint: "/v1beta/models/gemini-3-pro:streamGenerateContent", Status: 503, Class: "capacity"},
		{TS: at("2026-11-30T21:16:09.020Z"), RequestID: "r4", Attempt: 2, Source: "gateway", Model: "gemini-3-flash", RequestedModel: "gemini-3-pro", Endpoint: "/v1beta/models/gemini-3-pro:streamGenerateContent", Status: 200, Class: "ok", FallbackFrom: "gemini-3-pro"},
	}
	w, err := events.NewWriter(log, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		w.Write(r)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := report.Options{EventLog: log, EventLogNamed: true, CodexHome: codex, ClaudeHome: claude, GeminiHome: gemini, TempDir: t.TempDir(), Loc: time.UTC}
	r := build(t, o)
	// the log's five attempts, and Claude Code's three failed ones that
	// the log does not hold
	if r.Totals.Attempts != 8 {
		t.Fatalf("%d attempts, want the log's 5 and 3 of Claude Code's own: %+v", r.Totals.Attempts, r.Inputs)
	}
	skipped := map[string]int{}
	for _, in := range r.Inputs {
		skipped[in.Source+" "+filepath.Base(in.Path)] = in.Duplicates
	}
	if want := map[string]int{"spillway events.jsonl": 0, "codex rollout-a.jsonl": 1, "claude ok.jsonl": 1, "claude capacity.jsonl": 0,
		"gemini session-2026-11-30T21-16-e9fccaaf.jsonl": 1}; !maps.Equal(skipped, want) {
		t.Fatalf("duplicates skipped %v, want %v", skipped, want)
	}
	// without the log, nothing is skipped
	o.Only = []string{"codex", "claude", "gemini"}
	if r := build(t, o); r.Totals.Attempts != 6 {
		t.Fatalf("%d attempts from the agents' files alone, want 6", r.Totals.Attempts)
	}
	// a gateway request matches one turn: the same turn in a second
	// project (another session, another machine) is counted; and a Codex
	// session older than the log's first record (rotated away) is too
	late := filepath.Join(t.TempDir(), "events.jsonl")
	w, _ = events.NewWriter(late, 0, 0)
	w.Write(recs[1]) // Claude Code's answered turn, and nothing before it
	w.Close(context.Background())
	two := place(t, map[string]string{"claude/transcript-ok.jsonl": "projects/-a/ok.jsonl"})
	b, _ := os.ReadFile(filepath.Join(two, "projects/-a/ok.jsonl"))
	os.MkdirAll(filepath.Join(two, "projects/-b"), 0o700)
	os.WriteFile(filepath.Join(two, "projects/-b/ok.jsonl"), b, 0o600)
	r = build(t, report.Options{EventLog: late, EventLogNamed: true, CodexHome: codex, ClaudeHome: two, Only: []string{"spillway", "codex", "claude"}, Loc: time.UTC})
	dups := 0
	for _, in := range r.Inputs {
		dups += in.Duplicates
	}
	// the log's 1, one of the two Claude Code turns, Codex's turn (before the log)
	if r.Totals.Attempts != 3 || dups != 1 {
		t.Fatalf("%d attempts, %d duplicates: want 3 and 1 (%+v)", r.Totals.Attempts, dups, r.Inputs)
	}
}

// Claude Code in its Bedrock or Vertex AI mode comes to the cloud routes
// (records labelled with wire.CloudEndpoints' paths): its turn in the log
// is a Claude Code turn as on /v1/messages, counted once; a record of any
// other route (Gemini's, a count) leaves the turn to the transcript.
func TestCloudModeTurnsTheGatewayLoggedCountOnce(t *testing.T) {
	claude := place(t, map[string]string{"claude/transcript-ok.jsonl": "projects/-work/ok.jsonl"})
	at, _ := time.Parse(time.RFC3339Nano, "2026-11-30T21:15:55.600Z") // the answered turn's request: 21:15:55.522
	tests := []struct {
		endpoint string
		dups     int
	}{
		{"/v1/messages", 1},
		{"/bedrock/model/{model}/invoke-with-response-stream", 1},
		{"/bedrock/model/{model}/invoke", 1},
		{"/vertex/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict", 1},
		{"/vertex/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict", 1},
		{"/bedrock/model/{model}/count-tokens", 0},
		{"/v1beta/models/{model}:streamGenerateContent", 0},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "events.jsonl")
			w, err := events.NewWriter(log, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(events.Record{TS: at, RequestID: "r1", Attempt: 1, Source: "gateway", Model: "claude-opus-5-5",
				RequestedModel: "claude-opus-5-5", Endpoint: tt.endpoint, Status: 200, Class: "ok"})
			if err := w.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := build(t, report.Options{EventLog: log, EventLogNamed: true, ClaudeHome: claude, Only: []string{"spillway", "claude"}, Loc: time.UTC})
			dups := 0
			for _, in := range r.Inputs {
				if in.Source == "claude" {
					dups += in.Duplicates
				}
			}
			if dups != tt.dups {
				t.Fatalf("%d of Claude Code's turns left to the log, want %d (%+v)", dups, tt.dups, r.Inputs)
			}
		})
	}
}

// The pinned Codex CLI's rollouts and the event log of the gateway it went
// through (testdata/report/agents/README.md says how they were made): a
// Codex turn is left to the log only when the log holds its request (its
// model, started within 2 s of the turn), never for when it happened. On
// the gateway's own log each turn counts once; on an empty log, or a log
// that ended weeks before, every turn counts, from the rollouts.
func TestCodexTurnsAreLeftToTheLogByMatch(t *testing.T) {
	codex := place(t, map[string]string{
		"codex-gateway/rollout-two-turns.jsonl": "sessions/2026/12/06/rollout-a.jsonl",
		"codex-gateway/rollout-tool-loop.jsonl": "sessions/2026/12/06/rollout-b.jsonl",
		"codex-gateway/rollout-spilled.jsonl":   "sessions/2026/12/06/rollout-c.jsonl",
	})
	empty := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// the log of another machine's gateway: the same model, at other times
	other := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := events.NewWriter(other, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []string{"2026-12-06T00:30:10.000Z", "2026-12-06T00:30:15.500Z", "2026-12-06T00:30:26.000Z"} {
		at, _ := time.Parse(time.RFC3339Nano, ts)
		w.Write(events.Record{TS: at, RequestID: "x", Attempt: 1, Source: events.SourceGateway, Model: "gpt-6-astra", RequestedModel: "gpt-6-astra", Endpoint: "/v1/responses", Status: 200, Class: "ok"})
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, log string
		logged    int    // the log's attempts in range
		turns     int    // Codex turns counted from the rollouts
		dups      [3]int // turns left to the log, by rollout
	}{
		// two turns of one session, a tool loop's turn (two requests),
		// a turn the gateway spilled to another model (two attempts)
		{"the gateway's own log", filepath.Join(fixtures(t), "codex-gateway", "events.jsonl"), 6, 0, [3]int{2, 1, 1}},
		{"an empty log", empty, 0, 4, [3]int{}},
		{"a log that ended weeks before", filepath.Join("..", "..", "testdata", "report", "week.jsonl.gz"), 5040, 4, [3]int{}},
		{"another gateway's log", other, 3, 4, [3]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := build(t, report.Options{EventLog: c.log, EventLogNamed: true, CodexHome: codex, Only: []string{"spillway", "codex"}, Loc: time.UTC})
			var dups [3]int
			turns := 0
			for _, in := range r.Inputs {
				if in.Source == "codex" {
					dups[strings.Index("abc", strings.TrimSuffix(strings.TrimPrefix(filepath.Base(in.Path), "rollout-"), ".jsonl"))] = in.Duplicates
					turns += in.Events
				}
			}
			if turns != c.turns || dups != c.dups || r.Totals.Attempts != c.logged+c.turns {
				t.Fatalf("%d turns counted, %v left to the log, %d attempts in all: want %d, %v and %d (%+v)", turns, dups, r.Totals.Attempts, c.turns, c.dups, c.logged+c.turns, r.Inputs)
			}
			if c.dups[0] == 0 {
				return
			}
			// the text and the page say how many turns were left to the log
			want := "codex    " + filepath.Join(codex, "sessions/2026/12/06/rollout-a.jsonl") + ": 0 events, 2 turns already in the event log skipped"
			if lines := report.InputLines(r); !slices.Contains(lines, want) {
				t.Fatalf("input lines %q lack %q", lines, want)
			}
			var page bytes.Buffer
			if err := report.HTML(&page, r); err != nil || !strings.Contains(page.String(), "<li>"+want+"</li>") {
				t.Fatalf("the page lacks %q (%v)", want, err)
			}
		})
	}
}
