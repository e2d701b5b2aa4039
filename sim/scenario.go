package sim

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spillway/spillway/config"
)

// Scenario describes the simulated world: pools, their load over the day,
// rate limits, special keys, outages and random network faults.
type Scenario struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	// Start is the simulated time the clock starts at (RFC 3339); empty means now.
	Start string `yaml:"start" json:"start,omitempty"`
	// TokenRate is how many answer tokens per second are streamed; 0 streams
	// as fast as possible.
	TokenRate float64 `yaml:"token_rate" json:"token_rate"`
	// AnswerTokens pads answers to at least this many tokens.
	AnswerTokens int `yaml:"answer_tokens" json:"answer_tokens"`
	// CapacityStyle is where a full pool is reported on streams: auto (the
	// provider's usual place: response.failed after response.created on
	// Responses streams, HTTP status elsewhere), status, or event.
	CapacityStyle string `yaml:"capacity_style" json:"capacity_style"`
	// FatTokens is how many input tokens take one more pool slot.
	FatTokens int `yaml:"fat_tokens" json:"fat_tokens"`
	// Noise is the amplitude of the per-minute random load change, as a
	// fraction of the pool.
	Noise     float64          `yaml:"noise" json:"noise"`
	Tiers     map[string]Pool  `yaml:"tiers" json:"tiers"`
	Models    map[string]Pool  `yaml:"models" json:"models,omitempty"`
	Keys      map[string]Key   `yaml:"keys" json:"keys,omitempty"`
	RateLimit Limits           `yaml:"rate_limit" json:"rate_limit"`
	Outages   []Outage         `yaml:"outages" json:"outages,omitempty"`
	Network   NetworkFaults    `yaml:"network" json:"network"`
	Extra     map[string]Model `yaml:"extra_models" json:"extra_models,omitempty"`
	// Regions change pools and outages in one region of the simulator's
	// (--regions) only, over the scenario's own: Bedrock us-east-1 full
	// while us-west-2 is free.
	Regions map[string]RegionScenario `yaml:"regions" json:"regions,omitempty"`
}

// RegionScenario is what one region changes: its models' pools (over the
// scenario's models) and outages of its own (besides the scenario's).
type RegionScenario struct {
	Models  map[string]Pool `yaml:"models" json:"models,omitempty"`
	Outages []Outage        `yaml:"outages" json:"outages,omitempty"`
}

// forRegion is the scenario region name runs: s with the region's pools
// and outages.
func (s *Scenario) forRegion(name string) *Scenario {
	r, ok := s.Regions[name]
	c := *s
	c.Regions = nil
	if !ok {
		return &c
	}
	c.Models = map[string]Pool{}
	for m, p := range s.Models {
		c.Models[m] = p
	}
	for m, p := range r.Models {
		c.Models[m] = p
	}
	c.Outages = append(append([]Outage(nil), s.Outages...), r.Outages...)
	return &c
}

// Pool is one model's (or tier's) capacity.
type Pool struct {
	// Size is the number of concurrent slots.
	Size int `yaml:"pool" json:"pool"`
	// PeakLoad is the background load at the weekday peak, as a fraction of
	// the pool; QuietLoad at night.
	PeakLoad  float64 `yaml:"peak_load" json:"peak_load"`
	QuietLoad float64 `yaml:"quiet_load" json:"quiet_load"`
}

// Key is a special API key.
type Key struct {
	// State is ok, quota (out of credits) or invalid.
	State string `yaml:"state" json:"state"`
	RPM   int    `yaml:"rpm" json:"rpm,omitempty"`
	TPM   int    `yaml:"tpm" json:"tpm,omitempty"`
}

// Limits are per key and model, per simulated minute; 0 means none.
type Limits struct {
	RPM int `yaml:"rpm" json:"rpm"`
	TPM int `yaml:"tpm" json:"tpm"`
}

// Outage fills pools completely for a while, counted from the clock start.
type Outage struct {
	After  config.Duration `yaml:"after" json:"after"`
	For    config.Duration `yaml:"for" json:"for"`
	Models []string        `yaml:"models" json:"models,omitempty"` // empty: all
}

// NetworkFaults are per-request probabilities of transport failures.
type NetworkFaults struct {
	Reset     float64         `yaml:"reset" json:"reset"`
	Stall     float64         `yaml:"stall" json:"stall"`
	StallFor  config.Duration `yaml:"stall_for" json:"stall_for"`
	Midstream float64         `yaml:"midstream" json:"midstream"`
}

// Model is a model the scenario adds to the configured ones.
type Model struct {
	Provider string `yaml:"provider" json:"provider"` // openai, anthropic, gemini
	Tier     string `yaml:"tier" json:"tier"`
	Context  int    `yaml:"context" json:"context"`
}

func d(t time.Duration) config.Duration { return config.Duration(t) }

// base returns the defaults every scenario starts from.
func base(name, desc string) *Scenario {
	return &Scenario{
		Name: name, Description: desc,
		TokenRate: 200, AnswerTokens: 16, CapacityStyle: "auto", FatTokens: 8000, Noise: 0.05,
		Tiers: map[string]Pool{
			"heavy":  {Size: 8, PeakLoad: 0.3, QuietLoad: 0.05},
			"medium": {Size: 16, PeakLoad: 0.2, QuietLoad: 0},
			"light":  {Size: 32, PeakLoad: 0.1, QuietLoad: 0},
		},
		Network: NetworkFaults{StallFor: d(30 * time.Second)},
	}
}

// BuiltinNames lists the built-in scenarios.
var BuiltinNames = []string{"calm", "peak", "outage", "ratelimited", "flaky-network"}

// Builtin returns a built-in scenario by name.
func Builtin(name string) (*Scenario, bool) {
	switch name {
	case "calm":
		return base("calm", "plenty of room everywhere; nothing fails unless a fault is injected"), true
	case "peak":
		s := base("peak", "weekday peak: heavy tier mostly full, medium often, light rarely")
		s.Start = "2026-11-25T11:00:00Z" // a Wednesday, mid-peak
		s.Noise = 0.1
		s.Tiers = map[string]Pool{
			"heavy":  {Size: 4, PeakLoad: 0.82, QuietLoad: 0.3},
			"medium": {Size: 8, PeakLoad: 0.85, QuietLoad: 0.1},
			"light":  {Size: 16, PeakLoad: 0.4, QuietLoad: 0},
		}
		return s, true
	case "outage":
		s := base("outage", "every pool full for the first 10 simulated minutes, then calm")
		s.Outages = []Outage{{After: 0, For: d(10 * time.Minute)}}
		return s, true
	case "ratelimited":
		s := base("ratelimited", "calm pools, but every key is held to 20 requests and 40000 tokens per minute")
		s.RateLimit = Limits{RPM: 20, TPM: 40000}
		return s, true
	case "flaky-network":
		s := base("flaky-network", "calm pools, but connections reset, stall and break mid-stream")
		s.Network = NetworkFaults{Reset: 0.1, Stall: 0.03, StallFor: d(20 * time.Second), Midstream: 0.05}
		return s, true
	}
	return nil, false
}

// ErrUnknownScenario is LoadScenario's answer to a name that is neither a
// built-in scenario nor a file.
var ErrUnknownScenario = errors.New("unknown scenario")

// LoadScenario returns a built-in scenario by name, or reads a YAML file.
// A file starts from the calm defaults and overrides what it writes.
func LoadScenario(nameOrFile string) (*Scenario, error) {
	if nameOrFile == "" {
		nameOrFile = "calm"
	}
	if s, ok := Builtin(nameOrFile); ok {
		return s, nil
	}
	data, err := os.ReadFile(nameOrFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(nameOrFile, "./") {
			return nil, fmt.Errorf("sim: %w %q; built-in: %s, or a YAML file", ErrUnknownScenario, nameOrFile, strings.Join(BuiltinNames, ", "))
		}
		return nil, fmt.Errorf("sim: scenario: %w", err)
	}
	return ParseScenario(nameOrFile, data)
}

// ParseScenario reads a scenario file's YAML as config check reads the
// configuration: every mistake at once (a *config.Error), each with the
// file, line, column and field.
func ParseScenario(name string, data []byte) (*Scenario, error) {
	s := base(strings.TrimSuffix(name, ".yaml"), "")
	s.Tiers = nil
	chk := config.DecodeFile(name, data, s)
	if s.Tiers == nil {
		s.Tiers = base("", "").Tiers
	} else {
		def := base("", "").Tiers
		for t, p := range def {
			if _, ok := s.Tiers[t]; !ok {
				s.Tiers[t] = p
			}
		}
	}
	s.check(chk.At)
	if err := chk.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks ranges and names.
func (s *Scenario) Validate() error {
	var errs []string
	s.check(func(field, msg string) { errs = append(errs, field+": "+msg) })
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("sim: scenario %s: %s", s.Name, strings.Join(errs, "\n"))
	}
	return nil
}

// check tells at each field whose value is out of range or unknown.
func (s *Scenario) check(at func(field, msg string)) {
	if s.Start != "" {
		if _, err := time.Parse(time.RFC3339, s.Start); err != nil {
			at("start", fmt.Sprintf("%q is not an RFC 3339 time such as 2026-11-25T11:00:00Z", s.Start))
		}
	}
	if s.TokenRate < 0 {
		at("token_rate", fmt.Sprintf("must be 0 (no delay) or more, not %g", s.TokenRate))
	}
	switch s.CapacityStyle {
	case "", "auto", "status", "event":
	default:
		at("capacity_style", fmt.Sprintf("unknown style %q; allowed: auto, status, event", s.CapacityStyle))
	}
	if s.FatTokens < 1 {
		at("fat_tokens", fmt.Sprintf("must be at least 1, not %d", s.FatTokens))
	}
	if s.Noise < 0 || s.Noise > 1 {
		at("noise", fmt.Sprintf("must be from 0 to 1, not %g", s.Noise))
	}
	checkPool := func(where string, p Pool) {
		if p.Size < 1 {
			at(where+".pool", fmt.Sprintf("must be at least 1, not %d", p.Size))
		}
		for field, v := range map[string]float64{"peak_load": p.PeakLoad, "quiet_load": p.QuietLoad} {
			if v < 0 || v > 1 {
				at(where+"."+field, fmt.Sprintf("must be a fraction from 0 to 1, not %g", v))
			}
		}
	}
	for _, t := range sortedKeys(s.Tiers) {
		if _, err := config.ParseTier(t); err != nil {
			at("tiers."+t, err.Error())
		}
		checkPool("tiers."+t, s.Tiers[t])
	}
	for _, m := range sortedKeys(s.Models) {
		checkPool("models."+m, s.Models[m])
	}
	for _, name := range sortedKeys(s.Regions) {
		r := s.Regions[name]
		for _, m := range sortedKeys(r.Models) {
			checkPool("regions."+name+".models."+m, r.Models[m])
		}
		for i, o := range r.Outages {
			if o.For <= 0 {
				at(fmt.Sprintf("regions.%s.outages[%d].for", name, i), "must be more than 0s")
			}
		}
	}
	for _, k := range sortedKeys(s.Keys) {
		switch s.Keys[k].State {
		case "", "ok", "quota", "invalid":
		default:
			at("keys."+k+".state", fmt.Sprintf("unknown state %q; allowed: ok, quota, invalid", s.Keys[k].State))
		}
	}
	for i, o := range s.Outages {
		if o.For <= 0 {
			at(fmt.Sprintf("outages[%d].for", i), "must be more than 0s")
		}
	}
	for name, p := range map[string]float64{"reset": s.Network.Reset, "stall": s.Network.Stall, "midstream": s.Network.Midstream} {
		if p < 0 || p > 1 {
			at("network."+name, fmt.Sprintf("must be a probability from 0 to 1, not %g", p))
		}
	}
	for _, m := range sortedKeys(s.Extra) {
		e := s.Extra[m]
		switch e.Provider {
		case "openai", "anthropic", "gemini":
		default:
			at("extra_models."+m+".provider", fmt.Sprintf("unknown provider %q; allowed: openai, anthropic, gemini", e.Provider))
		}
		if _, err := config.ParseTier(e.Tier); err != nil {
			at("extra_models."+m+".tier", err.Error())
		}
		if e.Context < 1 {
			at("extra_models."+m+".context", fmt.Sprintf("must be a positive number of tokens, not %d", e.Context))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
