package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spillway/spillway/config"
)

// Step is one unit of a task: a prompt sent through the policy engine, or
// a command run under spillway exec. {{prev}} in a prompt or an argument is
// replaced by the previous step's output.
type Step struct {
	Name string `yaml:"name" json:"name"`
	// Prompt is the user message of a prompt step.
	Prompt string `yaml:"prompt" json:"prompt,omitempty"`
	// System is an optional system message of a prompt step.
	System string `yaml:"system" json:"system,omitempty"`
	// Model is where a prompt step starts (its chain follows); empty means
	// the task's chain's first model. A command step has one only from
	// queue add --model: its agent starts there, as exec --model.
	Model string `yaml:"model" json:"model,omitempty"`
	// Command is the argv of a command step.
	Command []string `yaml:"command" json:"command,omitempty"`

	where string // "FILE:LINE: steps[i]", for a step read from a file
}

// IsPrompt reports a prompt step.
func (s Step) IsPrompt() bool { return s.Prompt != "" }

// Window is a daily run window in local time, such as 22:00-07:00.
type Window struct {
	Start, End int // minutes after midnight; Start == End means always
	Spec       string
	// Loc is the zone of the window's hours; nil: the time's own (local).
	Loc *time.Location
}

// QuietDefault is the window `--window quiet` means.
const QuietDefault = "22:00-07:00"

// ParseWindow reads "HH:MM-HH:MM" or "quiet".
func ParseWindow(s string) (Window, error) {
	spec := strings.TrimSpace(s)
	if spec == "" {
		return Window{}, nil
	}
	if spec == "quiet" {
		w, _ := ParseWindow(QuietDefault)
		w.Spec = "quiet"
		return w, nil
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return Window{}, fmt.Errorf("window %q: write it as HH:MM-HH:MM (e.g. 22:00-07:00) or quiet", s)
	}
	start, err1 := clockMinutes(a)
	end, err2 := clockMinutes(b)
	if err := errors.Join(err1, err2); err != nil {
		return Window{}, fmt.Errorf("window %q: %v", s, err)
	}
	return Window{Start: start, End: end, Spec: spec}, nil
}

func clockMinutes(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", s)
	}
	return hh*60 + mm, nil
}

// Always reports a window that never holds a task back.
func (w Window) Always() bool { return w.Start == w.End }

// Contains reports whether t is inside the window (in t's location).
func (w Window) Contains(t time.Time) bool {
	if w.Always() {
		return true
	}
	if w.Loc != nil {
		t = t.In(w.Loc)
	}
	m := t.Hour()*60 + t.Minute()
	if w.Start < w.End {
		return m >= w.Start && m < w.End
	}
	return m >= w.Start || m < w.End // across midnight
}

// Next is t when t is inside the window, else the window's next start.
func (w Window) Next(t time.Time) time.Time {
	if w.Contains(t) {
		return t
	}
	if w.Loc != nil { // the next start in the window's zone
		local := w
		local.Loc = nil
		return local.Next(t.In(w.Loc)).In(t.Location())
	}
	// the start's wall-clock time today, else tomorrow: by the clock, not
	// midnight plus minutes (a day of a DST change is 23 or 25 hours long)
	start := time.Date(t.Year(), t.Month(), t.Day(), w.Start/60, w.Start%60, 0, 0, t.Location())
	if !start.After(t) {
		start = time.Date(t.Year(), t.Month(), t.Day()+1, w.Start/60, w.Start%60, 0, 0, t.Location())
	}
	return start
}

// ParseSteps reads a step file: a YAML list of steps. Every mistake is
// reported with the file, line and field.
func ParseSteps(name string, data []byte) ([]Step, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			return nil, fmt.Errorf("%s:%d: YAML: %s", name, ye.GetToken().Position.Line, ye.GetMessage())
		}
		return nil, fmt.Errorf("%s: YAML: %v", name, err)
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s: no steps; the file is a YAML list of steps, each with a name and a prompt or a command", name)
	}
	seq, ok := f.Docs[0].Body.(*ast.SequenceNode)
	if !ok {
		return nil, fmt.Errorf("%s:%d: the file must be a YAML list of steps (- name: …), not a %s", name, f.Docs[0].Body.GetToken().Position.Line, f.Docs[0].Body.Type())
	}
	var problems []string
	var steps []Step
	seen := map[string]int{}
	allowed := map[string]bool{"name": true, "prompt": true, "system": true, "model": true, "command": true}
	for i, item := range seq.Values {
		line := item.GetToken().Position.Line
		where := fmt.Sprintf("%s:%d: steps[%d]", name, line, i)
		m, ok := item.(*ast.MappingNode)
		var values []*ast.MappingValueNode
		if ok {
			values = m.Values
		} else if mv, ok2 := item.(*ast.MappingValueNode); ok2 {
			values = []*ast.MappingValueNode{mv}
		} else {
			problems = append(problems, where+": a step is a mapping with name and prompt or command")
			continue
		}
		for _, kv := range values {
			if k := kv.Key.String(); !allowed[k] {
				problems = append(problems, fmt.Sprintf("%s:%d: steps[%d].%s: unknown field; allowed: name, prompt, system, model, command", name, kv.Key.GetToken().Position.Line, i, k))
			}
		}
		var s Step
		if err := yaml.NodeToValue(item, &s); err != nil {
			var ye yaml.Error
			if errors.As(err, &ye) {
				problems = append(problems, fmt.Sprintf("%s:%d: steps[%d]: %s", name, ye.GetToken().Position.Line, i, ye.GetMessage()))
			} else {
				problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			}
			continue
		}
		if s.Name == "" {
			s.Name = fmt.Sprintf("step%d", i+1)
		}
		s.where = where
		if prev, dup := seen[s.Name]; dup {
			problems = append(problems, fmt.Sprintf("%s.name: %q is also the name of steps[%d]; step names must differ", where, s.Name, prev))
		}
		seen[s.Name] = i
		switch {
		case s.Prompt == "" && len(s.Command) == 0:
			problems = append(problems, where+": needs a prompt or a command")
		case s.Prompt != "" && len(s.Command) > 0:
			problems = append(problems, where+": has both a prompt and a command; a step is one or the other")
		case len(s.Command) > 0 && (s.System != "" || s.Model != ""):
			problems = append(problems, where+": system and model belong to prompt steps; a command step sets its model itself ({model})")
		}
		if i == 0 && (strings.Contains(s.Prompt, "{{prev}}") || strings.Contains(strings.Join(s.Command, " "), "{{prev}}")) {
			problems = append(problems, where+": the first step has no previous output to use ({{prev}})")
		}
		steps = append(steps, s)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", name)
	}
	return steps, nil
}

// Check finds what would make a task fail whatever the models do, with
// the same words as spillway config check: a model, chain or tier that is
// not configured, a window or deadline that can never hold. now is the
// time it is added.
func (t Task) Check(cfg *config.Config, now time.Time) error {
	var problems []string
	defined := func() string {
		names := make([]string, 0, len(cfg.Models))
		for n := range cfg.Models {
			names = append(names, n)
		}
		slices.Sort(names)
		return strings.Join(names, ", ")
	}
	if t.Chain != "" {
		if _, ok := cfg.Chains[t.Chain]; !ok {
			names := make([]string, 0, len(cfg.Chains))
			for n := range cfg.Chains {
				names = append(names, n)
			}
			slices.Sort(names)
			problems = append(problems, fmt.Sprintf("--chain: chain %q is not defined; defined chains: %s", t.Chain, strings.Join(names, ", ")))
		}
	}
	if t.MinTier != "" {
		if _, err := config.ParseTier(t.MinTier); err != nil {
			problems = append(problems, "--min-tier: "+err.Error())
		}
	}
	if _, err := ParseWindow(t.Window); err != nil {
		problems = append(problems, "--window: "+err.Error())
	}
	if !t.Deadline.IsZero() && !t.Deadline.After(now) {
		problems = append(problems, fmt.Sprintf("--deadline %s is already past (it is %s now)", t.Deadline.Format(time.RFC3339), now.Format(time.RFC3339)))
	}
	for i, st := range t.Steps {
		if st.Model == "" {
			continue
		}
		if _, ok := cfg.Models[st.Model]; !ok {
			where := st.where + ".model"
			if st.where == "" {
				where = "--model"
				if len(t.Steps) > 1 {
					where = fmt.Sprintf("steps[%d].model", i)
				}
			}
			problems = append(problems, fmt.Sprintf("%s: model %q is not defined; defined models: %s", where, st.Model, defined()))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// Warnings are what may fail when the task runs, though nothing is wrong
// with it: a prompt step whose first model's provider has no key here (the
// runner, in an environment of its own, may have it).
func (t Task) Warnings(cfg *config.Config) []string {
	var out []string
	for i, st := range t.Steps {
		if !st.IsPrompt() {
			continue
		}
		model := t.startModel(cfg, st)
		if why := noKey(cfg, model); why != "" {
			where := st.where
			if where == "" {
				where = "--prompt"
				if len(t.Steps) > 1 {
					where = fmt.Sprintf("steps[%d]", i)
				}
			}
			out = append(out, where+": "+why+"; the runner needs it")
		}
	}
	return out
}

// noKey says why a prompt to model would go without a key, "" when its
// provider has one. A prompt is sent with the provider's own api_key
// whatever its auth: the queue has no caller whose key it could pass on.
func noKey(cfg *config.Config, model string) string {
	deps := cfg.Deployments(model)
	if len(deps) == 0 {
		return ""
	}
	name := deps[0].Provider
	prov, ok := cfg.Providers[name]
	if !ok || prov.OwnCredentials() || config.IsSignIn(name) {
		return ""
	}
	fix := "give it an api_key in the configuration"
	if prov.APIKey.IsEnv() {
		fix = prov.APIKey.EnvVar() + " is not set"
	}
	return fmt.Sprintf("%s's provider %s has no key: %s (a prompt task is sent with the provider's api_key whatever its auth; under auth: passthrough only the gateway's callers bring their own)", model, name, fix)
}

// Expand replaces {{prev}} with the previous step's output.
func (s Step) Expand(prev string) Step {
	out := s
	out.Prompt = strings.ReplaceAll(s.Prompt, "{{prev}}", prev)
	out.Command = make([]string, len(s.Command))
	for i, a := range s.Command {
		out.Command[i] = strings.ReplaceAll(a, "{{prev}}", prev)
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
