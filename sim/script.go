package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Script is a scripted conversation (POST /_sim/script): the answers a
// model gives, turn by turn, instead of its usual text. A turn with a call
// answers with a call of that tool (several: parallel calls) in the wire
// format the request came in; the request of the conversation that brings
// the tool's result back gets the next turn. Where a conversation stands is
// read from the request itself (how many tool-calling turns came since its
// last prompt), so a request sent again, or to another model, gets the same
// turn.
type Script struct {
	// Model is the model it answers for; "" or "*": every model.
	Model string       `json:"model,omitempty"`
	Turns []ScriptTurn `json:"turns"`
	// Count is how many conversations it answers (a conversation counts
	// once its last turn is answered); -1 (or 0) until cleared.
	Count int `json:"count,omitempty"`
}

// ScriptTurn is one answer of a script: tool calls or text.
type ScriptTurn struct {
	// Call is one tool call, or a list of them (parallel calls).
	Call ScriptCalls `json:"call,omitempty"`
	// Text is the answer's text; {result} in it is the text of the tool
	// results the request carries (one a line).
	Text string `json:"text,omitempty"`
}

// ScriptCall asks for a call of Tool with Arguments. Tool "shell" is the
// client's own shell tool, found in the request by name and schema (Codex's
// exec or exec_command, Claude Code's Bash, Gemini CLI's
// run_shell_command, OpenCode's and Copilot CLI's bash, Cline's
// run_commands), with {"command": "..."} shaped to it.
type ScriptCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// ScriptCalls is a turn's calls: JSON takes one call or a list.
type ScriptCalls []ScriptCall

// UnmarshalJSON takes an object (one call) or a list of them.
func (c *ScriptCalls) UnmarshalJSON(b []byte) error {
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		var list []ScriptCall
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*c = list
		return nil
	}
	var one ScriptCall
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*c = ScriptCalls{one}
	return nil
}

// validate says what is wrong with the script, nil when it can be served.
func (sc *Script) validate() error {
	if len(sc.Turns) == 0 {
		return errors.New(`a script needs "turns": a list of {"call": {"tool": T, "arguments": {...}}} and {"text": "..."}`)
	}
	for i, t := range sc.Turns {
		switch {
		case len(t.Call) > 0 && t.Text != "":
			return fmt.Errorf("turn %d has both a call and text: a turn is one or the other", i)
		case len(t.Call) == 0 && t.Text == "":
			return fmt.Errorf(`turn %d is empty: give it a "call" or a "text"`, i)
		}
		for j, c := range t.Call {
			if c.Tool == "" {
				return fmt.Errorf(`turn %d, call %d names no "tool" (a tool of the request, or "shell")`, i, j)
			}
		}
	}
	return nil
}

// AddScript installs a script, replacing the model's (or every model's)
// script.
func (s *Server) AddScript(sc Script) error {
	if err := sc.validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if sc.Model == "" {
		sc.Model = "*"
	}
	if sc.Model != "*" {
		if _, ok := s.models[sc.Model]; !ok {
			return fmt.Errorf("sim: unknown model %q (known: %s)", sc.Model, strings.Join(s.modelNames(), ", "))
		}
	}
	if sc.Count == 0 {
		sc.Count = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[sc.Model] = &sc
	return nil
}

// ClearScripts removes the model's script, or every script for "".
func (s *Server) ClearScripts(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		s.scripts = map[string]*Script{}
		return
	}
	delete(s.scripts, model)
}

// scripted is the turn a script gives a request.
type scripted struct {
	*ScriptTurn
	last bool // the script's last turn
	// results is how many tool results the turn answers (the calls of the
	// turn before it)
	results int
}

// scriptTurn is the turn a script gives the call's conversation: nil when
// no script answers it (none for its model, or the conversation went past
// the script's end).
func (s *Server) scriptTurn(c *call) *scripted {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scripts[c.model.name]
	if sc == nil {
		sc = s.scripts["*"]
	}
	if sc == nil || c.convo == nil {
		return nil
	}
	// the turns whose calls the conversation has made are behind it
	k := 0
	for n := c.convo.callsSincePrompt(); k < len(sc.Turns) && n > 0; k++ {
		n -= len(sc.Turns[k].Call)
	}
	if k >= len(sc.Turns) {
		return nil
	}
	out := &scripted{ScriptTurn: &sc.Turns[k], last: k == len(sc.Turns)-1}
	if k > 0 {
		out.results = len(sc.Turns[k-1].Call)
	}
	return out
}

// scriptDone counts a conversation the script of model finished.
func (s *Server) scriptDone(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := model
	if s.scripts[key] == nil {
		key = "*"
	}
	if sc := s.scripts[key]; sc != nil && sc.Count > 0 {
		if sc.Count--; sc.Count == 0 {
			delete(s.scripts, key)
		}
	}
}

func (s *Server) handleScriptAdd(w http.ResponseWriter, r *http.Request) {
	var sc Script
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "sim: the script is not valid JSON: " + err.Error()})
		return
	}
	if err := s.AddScript(sc); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	s.handleScriptList(w, r)
}

func (s *Server) handleScriptList(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]Script, 0, len(s.scripts))
	for _, sc := range s.scripts {
		out = append(out, *sc)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	writeJSON(w, http.StatusOK, map[string]any{"scripts": out})
}

func (s *Server) handleScriptClear(w http.ResponseWriter, r *http.Request) {
	s.ClearScripts(r.URL.Query().Get("model"))
	w.WriteHeader(http.StatusNoContent)
}

// ---- a turn's calls, resolved against the request ----

// toolCall is one call the answer makes.
type toolCall struct {
	id     string // the call's id (call_…, toolu_…)
	itemID string // the Responses output item's id (fc_…, ctc_…)
	name   string
	custom bool   // a freeform tool: input is text
	args   string // the arguments' JSON text, or a custom tool's input
}

// shellTools are the names clients give their shell tool, by preference.
// (OpenCode's and Copilot CLI's bash, Cline's run_commands, Continue's Bash
// among them).
var shellTools = []string{"Bash", "run_shell_command", "exec_command", "shell", "local_shell", "bash", "run_commands", "exec"}

// resolve turns a script's calls into the calls of this request's answer:
// each tool found among the request's tools, its arguments shaped to it.
func (s *Server) resolve(cv *convo, calls ScriptCalls) ([]toolCall, error) {
	out := make([]toolCall, 0, len(calls))
	for _, sc := range calls {
		t, ok := cv.tool(sc.Tool)
		if sc.Tool == "shell" {
			t, ok = shellOf(cv)
		}
		if !ok {
			names := make([]string, len(cv.tools))
			for i, t := range cv.tools {
				names[i] = t.name
			}
			return nil, fmt.Errorf("spillway sim: the script calls tool %q, which this request does not declare (its tools: %s)", sc.Tool, strings.Join(names, ", "))
		}
		tc := toolCall{id: s.nextID(""), name: t.name, custom: t.custom}
		var err error
		if sc.Tool == "shell" {
			tc.args, err = shellArgs(t, sc.Arguments)
		} else {
			tc.args, err = plainArgs(t, sc.Arguments)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, tc)
	}
	return out, nil
}

// shellOf is the request's shell tool.
func shellOf(cv *convo) (tool, bool) {
	for _, name := range shellTools {
		if t, ok := cv.tool(name); ok {
			if name == "exec" && !strings.Contains(t.desc, "exec_command") {
				continue // Codex's exec runs JavaScript that calls tools.exec_command; another exec is not known
			}
			return t, true
		}
	}
	return tool{}, false
}

// shellArgs shapes {"command": C} (and any other arguments) to the shell
// tool t.
func shellArgs(t tool, args map[string]any) (string, error) {
	cmd, _ := args["command"].(string)
	if cmd == "" {
		return "", errors.New(`spillway sim: a "shell" call needs "arguments": {"command": "..."}`)
	}
	if t.custom || freeform(t) { // Codex's exec: JavaScript calling its exec_command tool
		q, _ := json.Marshal(cmd)
		js := fmt.Sprintf("const r = await tools.exec_command({cmd: %s});\ntext(r.output);", q)
		if !t.custom { // the freeform tool as another vendor's function of one string
			b, err := json.Marshal(map[string]string{"input": js})
			return string(b), err
		}
		return js, nil
	}
	out := map[string]any{}
	for k, v := range args {
		if k != "command" {
			out[k] = v
		}
	}
	props, _ := t.schema["properties"].(map[string]any)
	key := "command"
	if _, ok := props["command"]; !ok {
		for _, k := range []string{"cmd", "commands"} { // Cline's run_commands takes a list
			if _, ok := props[k]; ok {
				key = k
				break
			}
		}
	}
	if p, _ := props[key].(map[string]any); str(p["type"]) == "array" && key == "commands" {
		out[key] = []string{cmd} // a list of command lines
	} else if str(p["type"]) == "array" {
		out[key] = []string{"bash", "-lc", cmd} // Codex's older shell tool takes argv
	} else {
		out[key] = cmd
	}
	if _, ok := props["description"]; ok && out["description"] == nil {
		out["description"] = "Run " + cmd
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// freeform reports a function whose one argument is a string "input": a
// freeform tool (Codex's exec) as a gateway carries it to another vendor,
// which a model fills with the tool's text.
func freeform(t tool) bool {
	props, _ := t.schema["properties"].(map[string]any)
	in, _ := props["input"].(map[string]any)
	return len(props) == 1 && str(in["type"]) == "string"
}

// plainArgs are a named tool's arguments as given: a function's as JSON, a
// custom tool's "input" as its text.
func plainArgs(t tool, args map[string]any) (string, error) {
	if t.custom {
		in, ok := args["input"].(string)
		if !ok {
			return "", fmt.Errorf(`spillway sim: %s is a freeform tool: give its input as "arguments": {"input": "..."}`, t.name)
		}
		return in, nil
	}
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	return string(b), err
}

// pieces splits a call's arguments into the deltas a provider streams them
// in: a few characters each, cut anywhere (inside strings too), never
// inside a UTF-8 sequence.
func pieces(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 0 && s[n]&0xC0 == 0x80 {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
