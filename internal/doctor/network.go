package doctor

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spillway/spillway/internal/agentfiles"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/internal/words"
)

// checkNetwork measures the path to a provider: DNS, TCP connects (median,
// p95, loss), the TLS handshake. The HTTP round trip is the provider
// check's.
func checkNetwork(ctx context.Context, o Options, p provider) []Finding {
	u, err := url.Parse(p.base)
	if err != nil || u.Host == "" {
		return []Finding{{Area: "network", Subject: p.name, Status: Broken, Summary: "base_url is not a URL", Evidence: p.base}}
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	subject := net.JoinHostPort(host, port)
	var fs []Finding
	if net.ParseIP(host) == nil {
		start := time.Now()
		dctx, cancel := context.WithTimeout(ctx, o.Timeout)
		addrs, err := net.DefaultResolver.LookupHost(dctx, host)
		cancel()
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			return []Finding{{Area: "network", Subject: subject, Status: Broken, Class: string(classify.Network),
				Summary: "DNS: " + host + " does not resolve", Evidence: err.Error()}}
		}
		fs = append(fs, Finding{Area: "network", Subject: subject, Status: Healthy, Summary: "DNS resolves", Evidence: fmt.Sprintf("%s in %s: %s", host, took, strings.Join(addrs, ", "))})
	}
	var times []time.Duration
	var lastErr error
	tried, timeouts := 0, 0
	for i := 0; i < o.Samples; i++ {
		tried++
		start := time.Now()
		d := net.Dialer{Timeout: min(o.Timeout, 3*time.Second)}
		c, err := d.DialContext(ctx, "tcp", subject)
		if err != nil {
			lastErr = err
			if classify.Err(err).Class == classify.Timeout {
				if timeouts++; timeouts == 3 && len(times) == 0 {
					break // three silent connects: a host that answers none (not 20 × 3 s)
				}
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		times = append(times, time.Since(start))
		c.Close()
	}
	loss := 1 - float64(len(times))/float64(tried)
	if len(times) == 0 && proxied(o) {
		// requests go through the proxy: a direct connect that fails says
		// nothing about them (the provider checks above went through it)
		return append(fs, Finding{Area: "network", Subject: subject, Status: Unknown,
			Summary: "direct connects fail; requests go through the proxy (see proxy)", Evidence: fmt.Sprint(lastErr)})
	}
	if len(times) == 0 {
		v := classify.Err(lastErr)
		why := string(v.Class)
		switch {
		case errors.Is(lastErr, syscall.ECONNREFUSED):
			why = "connection refused"
		case v.Class == classify.Timeout:
			why = "timed out"
		}
		return append(fs, Finding{Area: "network", Subject: subject, Status: Broken, Class: string(v.Class),
			Summary: fmt.Sprintf("TCP connect fails (%d of %d): %s", tried, tried, why), Evidence: fmt.Sprint(lastErr)})
	}
	slices.Sort(times)
	med, p95 := times[len(times)/2], times[int(math.Ceil(0.95*float64(len(times))))-1]
	ev := fmt.Sprintf("%s: median %s, p95 %s, loss %.0f%%", words.Count(tried, "connect"), ms(med), ms(p95), loss*100)
	f := Finding{Area: "network", Subject: subject, Status: Healthy, Summary: "TCP connects", Evidence: ev}
	if loss > 0.01 {
		f.Status, f.Summary, f.Class = Degraded, fmt.Sprintf("packet loss: %.0f%% of connects failed", loss*100), string(classify.Network)
	}
	if base, ok := loadBaseline(o)[subject]; ok {
		b := time.Duration(base * float64(time.Millisecond))
		f.Evidence += fmt.Sprintf("; your baseline %s", ms(b))
		if med > 2*b && med-b >= 50*time.Millisecond {
			f.Status, f.Summary = worse(f.Status, Degraded), fmt.Sprintf("slow: connects take %s, twice your usual %s", ms(med), ms(b))
		}
	}
	f.latency = med
	fs = append(fs, f)
	if u.Scheme == "https" {
		cfg := &tls.Config{ServerName: host}
		if o.TLS != nil {
			cfg = o.TLS.Clone()
			cfg.ServerName = host
		}
		start := time.Now()
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: o.Timeout}, Config: cfg}
		c, err := d.DialContext(ctx, "tcp", subject)
		if err != nil {
			return append(fs, Finding{Area: "network", Subject: subject, Status: Broken, Class: string(classify.Network),
				Summary: "TLS handshake fails", Evidence: err.Error()})
		}
		c.Close()
		fs = append(fs, Finding{Area: "network", Subject: subject, Status: Healthy, Summary: "TLS handshake", Evidence: "in " + ms(time.Since(start))})
	}
	return fs
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}

// baselineFile keeps, per host:port, the median connect time of the last
// healthy run (ms).
func baselineFile(o Options) string { return filepath.Join(o.StateDir, "doctor-baseline.json") }

func loadBaseline(o Options) map[string]float64 {
	m := map[string]float64{}
	if o.StateDir == "" {
		return m
	}
	if b, err := os.ReadFile(baselineFile(o)); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// saveBaseline stores this healthy run's connect medians.
func saveBaseline(o Options, fs []Finding) {
	m := loadBaseline(o)
	for _, f := range fs {
		if f.Area == "network" && f.Summary == "TCP connects" && f.latency > 0 {
			m[f.Subject] = float64(f.latency) / float64(time.Millisecond)
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if os.MkdirAll(o.StateDir, 0o700) == nil {
		_ = os.WriteFile(baselineFile(o), b, 0o600)
	}
}

// checkProxy names a proxy the environment sends requests through.
func checkProxy(o Options) []Finding {
	for _, v := range proxyVars {
		if p := o.Getenv(v); p != "" {
			ev := v + "=" + proxyURL(p)
			if np := cmp.Or(o.Getenv("NO_PROXY"), o.Getenv("no_proxy")); np != "" {
				ev += "; NO_PROXY=" + np
			}
			return []Finding{{Area: "proxy", Subject: v, Status: Healthy,
				Summary: "requests go through a proxy (the connects above are direct; a slow or failing proxy shows in the provider checks)", Evidence: ev}}
		}
	}
	return nil
}

// checkStatusPage reads a Statuspage summary: the page's indicator and the
// components that are not operational.
func checkStatusPage(ctx context.Context, o Options, rt http.RoundTripper, name, base string) []Finding {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	target := strings.TrimSuffix(base, "/") + "/api/v2/summary.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return []Finding{{Area: "status", Subject: name, Status: Unknown, Summary: "bad status page URL", Evidence: base}}
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return []Finding{{Area: "status", Subject: name, Status: Unknown, Summary: "status page not reached (--offline skips it)", Evidence: err.Error()}}
	}
	defer resp.Body.Close()
	var sum struct {
		Status struct {
			Indicator   string `json:"indicator"`
			Description string `json:"description"`
		} `json:"status"`
		Components []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"components"`
		Incidents []struct {
			Name string `json:"name"`
		} `json:"incidents"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 4<<20)).Decode(&sum) != nil {
		return []Finding{{Area: "status", Subject: name, Status: Unknown, Summary: "status page unreadable", Evidence: fmt.Sprintf("GET %s: %d", target, resp.StatusCode)}}
	}
	var down []string
	for _, c := range sum.Components {
		if c.Status != "" && c.Status != "operational" {
			down = append(down, c.Name+": "+strings.ReplaceAll(c.Status, "_", " "))
		}
	}
	var incidents []string
	for _, i := range sum.Incidents {
		incidents = append(incidents, i.Name)
	}
	f := Finding{Area: "status", Subject: name, Status: Healthy, Summary: cmp.Or(sum.Status.Description, sum.Status.Indicator),
		Evidence: strings.Join(append(down, incidents...), "; ")}
	switch sum.Status.Indicator { // a minor incident (often another product's) is for the record
	case "major":
		f.Status = Degraded
	case "critical":
		f.Status = Broken
	}
	if f.Status != Healthy {
		f.Summary = name + " reports: " + f.Summary
	}
	return []Finding{f}
}

// checkAgents reads what the agents know: Codex's usage windows (a plan's
// limit, not capacity) and the failures in the agents' files over the
// last day (for the record: the verdict is about now).
func checkAgents(o Options) []Finding {
	var fs []Finding
	codexHome := cmp.Or(o.CodexHome, agentfiles.CodexHome(o.Getenv))
	if codexHome != "" {
		lims, file := report.CodexLimits(codexHome)
		for _, l := range lims {
			f := Finding{Area: "agent", Subject: "codex", Status: Healthy,
				Summary:  fmt.Sprintf("%s usage window at %.0f%%", window(l.WindowMinutes), l.UsedPercent),
				Evidence: "newest rollout " + filepath.Base(file) + ", seen " + l.Seen.Local().Format("Jan 2 15:04")}
			if !l.ResetsAt.IsZero() {
				f.Summary += ", resets " + l.ResetsAt.Local().Format("Jan 2 15:04")
			}
			state := fmt.Sprintf("your Codex %s usage window is at %.0f%%", window(l.WindowMinutes), l.UsedPercent)
			if !l.ResetsAt.IsZero() {
				state += " (resets " + l.ResetsAt.Local().Format("Jan 2 15:04") + ")"
			}
			// a window seen longer ago than it lasts, with no reset time,
			// says nothing about now
			stale := l.ResetsAt.IsZero() && l.WindowMinutes > 0 && o.Now().Sub(l.Seen) > time.Duration(l.WindowMinutes)*time.Minute
			if stale {
				f.Summary += " (seen " + l.Seen.Local().Format("Jan 2 15:04") + ", longer ago than the window: not now)"
			} else if st, class, says := windowUse(l.UsedPercent, l.ResetsAt, o.Now()); st != Healthy {
				f.Status, f.Class, f.Summary = st, class, state+says
			}
			fs = append(fs, f)
		}
	}
	claudeHome := cmp.Or(o.ClaudeHome, agentfiles.ClaudeHome(o.Getenv))
	geminiHome := cmp.Or(o.GeminiHome, agentfiles.GeminiHome(o.Getenv))
	ro := report.Options{Only: []string{"codex", "claude", "gemini"}, CodexHome: codexHome, ClaudeHome: claudeHome, GeminiHome: geminiHome,
		Since: o.Now().Add(-24 * time.Hour), Loc: time.Local, Getenv: o.Getenv}
	for name, home := range map[string]string{"codex": codexHome, "claude": claudeHome, "gemini": geminiHome} {
		if home == "" || !exists(home) {
			ro.Only = slices.DeleteFunc(ro.Only, func(s string) bool { return s == name })
		}
	}
	if len(ro.Only) == 0 {
		return fs
	}
	r, err := report.Build(context.Background(), ro)
	if err != nil {
		return fs
	}
	fs = append(fs, usageLimits(o, r.UsageLimits)...)
	for _, m := range r.Models {
		var parts []string
		for _, class := range slices.Sorted(maps.Keys(m.Classes)) {
			if class != "ok" {
				parts = append(parts, fmt.Sprintf("%d %s", m.Classes[class], class))
			}
		}
		if len(parts) == 0 {
			continue
		}
		fs = append(fs, Finding{Area: "agent", Subject: m.Model, Status: Healthy,
			Summary:  "in the agents' files, last 24 h: " + strings.Join(parts, ", ") + " (past, not now)",
			Evidence: fmt.Sprintf("%s read (%s)", words.Count(m.Attempts, "attempt"), strings.Join(ro.Only, ", "))})
	}
	return fs
}

// windowUse judges a plan's usage window at used percent that resets at
// reset (zero: not said), as of now: used up (broken) or nearly (degraded),
// a limit of the plan's, with the words that say so; healthy once reset.
func windowUse(used float64, reset, now time.Time) (st Status, class, says string) {
	if !reset.IsZero() && !reset.After(now) {
		return Healthy, "", ""
	}
	switch {
	case used >= 100:
		return Broken, string(classify.UsageLimit), ": used up, your plan's limit, not capacity"
	case used >= 90:
		return Degraded, string(classify.UsageLimit), ": nearly used up, your plan's limit, not capacity"
	}
	return Healthy, "", ""
}

// agentNames are the agents as findings name them.
var agentNames = map[string]string{"codex": "Codex", "claude": "Claude Code", "gemini": "Gemini CLI"}

// usageLimits are the plans' usage limits the agents' files show for the
// last day, the newest of each agent: still on when its reset (said in the
// message) is to come, or, with no reset said, when it was met within the
// last five hours (a plan's shortest window).
func usageLimits(o Options, seen []report.QuotaIncident) []Finding {
	newest := map[string]report.QuotaIncident{}
	for _, q := range seen {
		if q.TS.After(newest[q.Source].TS) {
			newest[q.Source] = q
		}
	}
	var fs []Finding
	for _, src := range slices.Sorted(maps.Keys(newest)) {
		q := newest[src]
		name := cmp.Or(agentNames[src], src)
		v := classify.Classify(classify.Input{Text: q.Message, Now: q.TS})
		f := Finding{Area: "agent", Subject: src, Class: string(classify.UsageLimit), Evidence: "its files: " + q.Message}
		state := fmt.Sprintf("your %s plan's usage limit was met at %s", name, q.TS.Local().Format("Jan 2 15:04"))
		switch {
		case !v.ResetsAt.IsZero() && v.ResetsAt.After(o.Now()):
			f.Status, f.Summary = Broken, state+"; it resets at "+v.ResetsAt.Local().Format("Jan 2 15:04")+": your plan's limit, not capacity"
		case v.ResetsAt.IsZero() && o.Now().Sub(q.TS) < 5*time.Hour:
			f.Status, f.Summary = Degraded, state+" (its reset not said): your plan's limit, not capacity"
		default:
			f.Status, f.Summary = Healthy, state+" (reset since: past, not now)"
		}
		fs = append(fs, f)
	}
	return fs
}

func window(minutes int) string {
	switch {
	case minutes == 0:
		return "usage"
	case minutes%(60*24*7) == 0:
		return itoa(minutes/(60*24*7)) + "-week"
	case minutes%(60*24) == 0:
		return itoa(minutes/(60*24)) + "-day"
	case minutes%60 == 0:
		return itoa(minutes/60) + "-hour"
	}
	return itoa(minutes) + "-minute"
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// proxyURL is a proxy's URL without its credentials.
func proxyURL(p string) string {
	if !strings.Contains(p, "://") {
		p = "http://" + p // Go takes a proxy without its scheme too
	}
	u, err := url.Parse(p)
	if err != nil || u.Host == "" {
		return redact.String(p)
	}
	if u.User != nil {
		u.User = url.User("***")
	}
	return u.String()
}

// proxied reports a proxy in the environment (requests go through it).
func proxied(o Options) bool { return len(checkProxy(o)) > 0 }

// proxyVars are the variables the agents and Go's HTTP client take a proxy from.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}
