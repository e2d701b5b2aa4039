package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// checkGateway reads what the local gateway saw last of the plans' limits
// (the x-codex-* and anthropic-ratelimit-unified-* headers of the answers
// it relayed, kept by host, without any credential): a plan's usage window
// at its limit is the plan, not capacity. No gateway: no finding.
func checkGateway(o Options) []Finding {
	base := o.Gateway
	if base == "" && o.Config != nil && config.Loopback(o.Config.Listen) {
		host, port, err := net.SplitHostPort(o.Config.Listen)
		if err != nil {
			return nil
		}
		base = "http://" + net.JoinHostPort(cmp.Or(host, "127.0.0.1"), port)
	}
	if base == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(o.Timeout, 2*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/spillway/status", nil)
	if err != nil {
		return nil
	}
	if o.Config != nil && o.Config.Gateway.AdminKey.Value != "" {
		req.Header.Set("Authorization", "Bearer "+o.Config.Gateway.AdminKey.Value)
	}
	resp, err := (&http.Client{Transport: o.transport()}).Do(req)
	if err != nil {
		return nil // no gateway runs there
	}
	defer resp.Body.Close()
	var st struct {
		Plans []struct {
			Host    string            `json:"host"`
			Seen    time.Time         `json:"seen"`
			Headers map[string]string `json:"headers"`
		} `json:"plan_limits"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	var fs []Finding
	for _, p := range st.Plans {
		fs = append(fs, planFindings(o, p.Host, p.Seen, p.Headers)...)
	}
	return fs
}

// planFindings says what one host's plan headers tell: each usage window's
// percentage and reset (a ChatGPT plan's primary and secondary), or a
// Claude plan's unified limit.
func planFindings(o Options, host string, seen time.Time, h map[string]string) []Finding {
	var fs []Finding
	evidence := "the gateway's /spillway/status, seen " + seen.Local().Format("Jan 2 15:04")
	for _, w := range []string{"primary", "secondary"} {
		used, err := strconv.ParseFloat(h["x-codex-"+w+"-used-percent"], 64)
		if err != nil {
			continue
		}
		minutes, _ := strconv.Atoi(h["x-codex-"+w+"-window-minutes"])
		var reset time.Time
		if at, err := strconv.ParseInt(h["x-codex-"+w+"-reset-at"], 10, 64); err == nil && at > 0 {
			reset = time.Unix(at, 0)
		} else if after, err := strconv.ParseFloat(h["x-codex-"+w+"-reset-after-seconds"], 64); err == nil && after > 0 {
			reset = seen.Add(time.Duration(after * float64(time.Second)))
		}
		f := Finding{Area: "plan", Subject: host, Status: Healthy, Evidence: evidence,
			Summary: fmt.Sprintf("your ChatGPT plan's %s usage window at %.0f%%", window(minutes), used)}
		if !reset.IsZero() {
			f.Summary += ", resets " + reset.Local().Format("Jan 2 15:04")
		}
		if st, class, says := windowUse(used, reset, o.Now()); st != Healthy {
			f.Status, f.Class = st, class
			f.Summary += says
		}
		fs = append(fs, f)
	}
	if status := h["anthropic-ratelimit-unified-status"]; status != "" {
		f := Finding{Area: "plan", Subject: host, Status: Healthy, Evidence: evidence, Summary: "your Claude plan's usage: " + status}
		if at, err := strconv.ParseInt(h["anthropic-ratelimit-unified-reset"], 10, 64); err == nil && at > 0 {
			f.Summary += ", resets " + time.Unix(at, 0).Local().Format("Jan 2 15:04")
			if status == "rejected" && time.Unix(at, 0).After(o.Now()) {
				f.Status, f.Class = Broken, string(classify.UsageLimit)
				f.Summary = "your Claude plan's usage limit is reached; it resets " + time.Unix(at, 0).Local().Format("Jan 2 15:04") + ": your plan's limit, not capacity"
			}
		}
		fs = append(fs, f)
	}
	return fs
}
