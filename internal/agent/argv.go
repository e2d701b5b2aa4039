package agent

import (
	"path/filepath"
	"slices"
	"strings"
)

// Kind is a known agent.
type Kind string

// Known agents.
const (
	Codex  Kind = "codex"
	Claude Kind = "claude"
	Gemini Kind = "gemini"
	Other  Kind = ""
)

// KindOf recognises an agent by its command name.
func KindOf(command string) Kind {
	switch strings.TrimSuffix(filepath.Base(command), ".exe") {
	case "codex":
		return Codex
	case "claude":
		return Claude
	case "gemini":
		return Gemini
	}
	name := strings.TrimSuffix(filepath.Base(command), ".exe")
	for k, s := range specs {
		if slices.Contains(s.names, name) {
			return k
		}
	}
	return Other
}

// modelFlags are the flags that name the model, per agent.
func modelFlags(k Kind) []string {
	switch k {
	case Codex, Gemini:
		return []string{"-m", "--model"}
	case Claude:
		return []string{"--model"}
	}
	if s := specOf(k); s != nil {
		return s.modelFlags
	}
	return nil
}

// flagValueFor is the model flag's value for model, as agent k takes it,
// in place of the value old ("" when the command named none).
func flagValueFor(k Kind, old, model string) string {
	if s := specOf(k); s != nil && s.modelValue != nil {
		return s.modelValue(old, model)
	}
	return model
}

// modelFromFlag is the model a model flag's value names, for agent k.
func modelFromFlag(k Kind, value string) string {
	if s := specOf(k); s != nil && s.modelOf != nil {
		return s.modelOf(value)
	}
	return value
}

// ModelIn returns the model the command line names, if any.
func ModelIn(args []string) string {
	k := KindOf(args[0])
	for i := 1; i < len(args); i++ {
		for _, f := range modelFlags(k) {
			if args[i] == f && i+1 < len(args) {
				return modelFromFlag(k, args[i+1])
			}
			if v, ok := strings.CutPrefix(args[i], f+"="); ok {
				return modelFromFlag(k, v)
			}
		}
	}
	return ""
}

// WithModel returns args set to run model: {model} placeholders are
// replaced; otherwise, for a known agent, its model flag is replaced or
// added. ok is false when the model could not be set (an unknown command
// without a placeholder).
func WithModel(args []string, model string) (out []string, ok bool) {
	out = make([]string, len(args))
	placeholder := false
	for i, a := range args {
		if strings.Contains(a, "{model}") {
			placeholder = true
			a = strings.ReplaceAll(a, "{model}", model)
		}
		out[i] = a
	}
	if placeholder {
		return out, true
	}
	k := KindOf(args[0])
	flags := modelFlags(k)
	if flags == nil {
		return out, false
	}
	for i := 1; i < len(out); i++ {
		for _, f := range flags {
			if out[i] == f && i+1 < len(out) {
				out[i+1] = flagValueFor(k, out[i+1], model)
				return out, true
			}
			if old, ok := strings.CutPrefix(out[i], f+"="); ok {
				out[i] = f + "=" + flagValueFor(k, old, model)
				return out, true
			}
		}
	}
	// add the flag after the subcommand (codex exec …) or the command
	at := 1
	if k == Codex && len(out) > 1 && out[1] == "exec" {
		at = 2
	}
	if s := specOf(k); s != nil && s.flagAt != nil {
		at = s.flagAt(out)
	}
	res := append([]string{}, out[:at]...)
	res = append(res, flags[0], flagValueFor(k, "", model))
	return append(res, out[at:]...), true
}

// resumeArgs turns the original command into one that continues session id
// on model with prompt. ok is false when the agent cannot resume this way.
func resumeArgs(args []string, id, model, prompt string) ([]string, bool) {
	switch KindOf(args[0]) {
	case Codex:
		// codex exec [flags] PROMPT  →  codex exec [flags] resume ID -m MODEL PROMPT
		if len(args) < 3 || args[1] != "exec" || id == "" {
			return nil, false
		}
		flags := execFlags(args[2:])
		out := append([]string{args[0], "exec"}, flags...)
		return append(out, "resume", id, "-m", model, prompt), true
	case Claude:
		// claude -p PROMPT [flags]  →  claude -p PROMPT [flags] --resume ID (or --continue)
		out, _ := WithModel(dropFlags(args, map[string]bool{"--resume": true, "-r": true}, map[string]bool{"--continue": true, "-c": true}), model)
		out = replacePrompt(out, prompt)
		if id != "" {
			return append(out, "--resume", id), true
		}
		return append(out, "--continue"), true
	case Gemini:
		// gemini [flags] -p PROMPT  →  gemini [flags] -m MODEL -p PROMPT --resume ID
		// (a prompt given as an argument, not -p, cannot be told from the rest)
		if id == "" || flagValue(args, "-p", "--prompt") == "" {
			return nil, false
		}
		out, _ := WithModel(dropFlags(args, geminiSessionFlags, nil), model)
		return append(replacePrompt(out, prompt), "--resume", id), true
	}
	if s := specOf(KindOf(args[0])); s != nil && s.resume != nil && (id != "" || s.continues) {
		return s.resume(args, id, model, prompt)
	}
	return nil, false
}

// geminiSessionFlags are Gemini CLI's flags that choose the session.
var geminiSessionFlags = map[string]bool{"--resume": true, "-r": true, "--session-id": true}

// withSessionID gives a Gemini CLI command line the session id, so that
// the session of a run that fails can be found and resumed; a command that
// resumes a session of its own is left as it is.
func withSessionID(args []string, id string) []string {
	if flagValue(args, "-r", "--resume") != "" {
		return args
	}
	return append(dropFlags(args, map[string]bool{"--session-id": true}, nil), "--session-id", id)
}

// flagValue is the value of the first of names on the command line
// ("--name value" or "--name=value").
func flagValue(args []string, names ...string) string {
	for i := 1; i < len(args); i++ {
		for _, n := range names {
			if args[i] == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(args[i], n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// codexExecFlags are the flags of `codex exec` (0.169) that still apply when
// resuming, with whether they take a value. Anything else is dropped, with
// the word after it when that is not a flag: it is either the flag's value
// or the prompt, and the prompt is replaced anyway.
var codexExecFlags = map[string]bool{
	"-c": true, "--config": true, "--enable": true, "--disable": true, "--strict-config": false,
	"--oss": false, "--local-provider": true, "-p": true, "--profile": true, "-s": true, "--sandbox": true,
	"--approve-for-me": false, "--dangerously-bypass-approvals-and-sandbox": false, "--dangerously-bypass-hook-trust": false,
	"-C": true, "--cd": true, "--add-dir": true, "--skip-git-repo-check": false, "--trust": false,
	"--ignore-user-config": false, "--ignore-rules": false, "--color": true, "--json": false,
	"-o": true, "--output-last-message": true, "--full-auto": false,
}

// execFlags keeps the flags of a codex exec command line that still apply
// when resuming; the prompt, the model and images are dropped, and so is
// everything after "--".
func execFlags(rest []string) []string {
	var out []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // the prompt (or an image path after -i)
		}
		name, _, hasEq := strings.Cut(a, "=")
		takesValue, known := codexExecFlags[name]
		switch {
		case !known:
			if !hasEq && i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") {
				i++ // its value, or the prompt: both go
			}
		case hasEq:
			out = append(out, a)
		case takesValue:
			if i+1 < len(rest) {
				out = append(out, a, rest[i+1])
				i++
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// dropFlags removes the flags withValue ("--f v" or "--f=v") and bare.
func dropFlags(args []string, withValue, bare map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasEq := strings.Cut(args[i], "=")
		if withValue[name] {
			if !hasEq {
				i++
			}
			continue
		}
		if bare[args[i]] {
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// replacePrompt replaces the prompt after claude's -p/--print or gemini's
// -p/--prompt.
func replacePrompt(args []string, prompt string) []string {
	out := append([]string{}, args...)
	for i := 1; i < len(out); i++ {
		if strings.HasPrefix(out[i], "--prompt=") {
			out[i] = "--prompt=" + prompt
			return out
		}
		if (out[i] == "-p" || out[i] == "--print" || out[i] == "--prompt") && i+1 < len(out) {
			if !strings.HasPrefix(out[i+1], "-") {
				out[i+1] = prompt
			}
			return out
		}
	}
	return out
}
