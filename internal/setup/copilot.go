package setup

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// GitHub Copilot CLI (1.0.102) talks to a provider of the user's own
// ("bring your own key") when COPILOT_PROVIDER_BASE_URL is set: no GitHub
// sign-in, no Copilot model routing. Everything it needs is environment;
// its settings.json has nothing that must change (its "model" is for
// GitHub's models and is not read in this mode, where COPILOT_MODEL or
// --model is required), so setup copilot writes no file.

// Copilot's provider types and wire APIs, as setup copilot takes them.
const (
	CopilotOpenAI    = "openai"    // Chat Completions or Responses at the gateway's /v1
	CopilotAnthropic = "anthropic" // Messages at the gateway's /v1/messages
	CopilotChat      = "chat"
	CopilotResponses = "responses"
)

// copilotOff are Copilot CLI's variables that would override what
// CopilotEnv sets: a bearer token or a key command wins over
// COPILOT_PROVIDER_API_KEY, and a wire model or model id over
// COPILOT_MODEL.
var copilotOff = []string{"COPILOT_PROVIDER_BEARER_TOKEN", "COPILOT_PROVIDER_API_KEY_COMMAND",
	"COPILOT_PROVIDER_WIRE_MODEL", "COPILOT_PROVIDER_MODEL_ID"}

// CopilotSetup is what CopilotEnv prints.
type CopilotSetup struct {
	BaseURL string // the gateway
	Type    string // CopilotOpenAI (default) or CopilotAnthropic
	Wire    string // CopilotChat (default) or CopilotResponses; openai only
	Model   string // COPILOT_MODEL
	// EnvKey is the variable whose value Copilot sends as its provider key
	// (its name: the value is never printed).
	EnvKey string
}

// CopilotEnv is the environment that points Copilot CLI at the gateway,
// as lines for shell (see Shells; an unknown shell gets sh's), with
// comments: the provider's base URL (the gateway's /v1 for openai, its
// root for anthropic, which appends /v1/messages), type, wire API, model,
// and COPILOT_PROVIDER_API_KEY taken from $EnvKey when the lines run.
func CopilotEnv(c CopilotSetup, shell string) string {
	s, _ := Shell(shell)
	base := BaseURL(c.BaseURL)
	typ, wire, api := c.Type, "completions", "Chat Completions at "+base+"/v1/chat/completions"
	if typ == "" {
		typ = CopilotOpenAI
	}
	u := base + "/v1"
	switch {
	case typ == CopilotAnthropic:
		u, api = base, "Messages at "+base+"/v1/messages"
	case c.Wire == CopilotResponses:
		wire, api = "responses", "Responses at "+base+"/v1/responses"
	}
	vars := []envVar{{"COPILOT_PROVIDER_BASE_URL", u}, {"COPILOT_PROVIDER_TYPE", typ}}
	if typ == CopilotOpenAI {
		vars = append(vars, envVar{"COPILOT_PROVIDER_WIRE_API", wire})
	}
	vars = append(vars, envVar{"COPILOT_MODEL", c.Model})
	names := []string{}
	for _, v := range vars {
		names = append(names, v.name)
	}
	names = append(names, "COPILOT_PROVIDER_API_KEY")
	var b strings.Builder
	fmt.Fprintf(&b, `# GitHub Copilot CLI with your own provider: the spillway gateway (%s).
# No GitHub sign-in is needed or used; COPILOT_MODEL is the model it asks for
# (--model overrides it), and the gateway falls back along its chain.
# Copilot sends the value of $%s as its provider key; the key itself is
# not printed here. spillway setup copilot writes no file: Copilot reads all
# of this from the environment. Add COPILOT_OFFLINE=true to keep it off the
# network altogether (no GitHub, telemetry, web tools or updates).
# Add the lines below to your shell profile to keep them; undo: %s
# The first line unsets what would override these (%s);
# the undo line does not bring them back: set any you had again by hand.
`, api, c.EnvKey, unsetLine(names, s, false), strings.Join(copilotOff, ", "))
	fmt.Fprintln(&b, unsetLine(copilotOff, s, true))
	for _, v := range vars {
		fmt.Fprintln(&b, setLine(v.name, v.value, s))
	}
	fmt.Fprintln(&b, refLine("COPILOT_PROVIDER_API_KEY", c.EnvKey, s))
	return b.String()
}

// refLine sets name to the value variable from has when the line runs, in
// shell's syntax.
func refLine(name, from, shell string) string {
	switch shell {
	case "fish":
		return "set -gx " + name + " $" + from
	case "powershell":
		return "$env:" + name + " = $env:" + from
	}
	return "export " + name + `="$` + from + `"`
}

// vendorHosts are the providers' own hosts: an agent pointed at one of
// them is not set up for spillway.
var vendorHosts = []string{"api.openai.com", "api.anthropic.com", ".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com"}

// GatewayBase is the one rule by which setup's listing tells an agent's
// provider URL for the gateway (Copilot CLI's, Cline's): an http(s) URL
// with a host that is not a vendor's own API, and the path setup writes
// for it: /v1, or the root for an agent that appends /v1 itself (paths
// lists them; "" is the root). A path of another kind (OpenRouter's
// /api/v1) is not the gateway. shown is the URL as it may be printed (a
// password in it redacted).
func GatewayBase(raw string, paths ...string) (shown string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	for _, h := range vendorHosts {
		if u.Hostname() == h || strings.HasPrefix(h, ".") && strings.HasSuffix(u.Hostname(), h) {
			return "", false
		}
	}
	if !slices.Contains(paths, strings.TrimRight(u.Path, "/")) {
		return "", false
	}
	return u.Redacted(), true
}

// CopilotState says whether Copilot is set up for spillway: state is "" when it
// is not, else what it is set up for ("api key", ...); where is the file
// (or environment) that says so. getenv is the environment setup runs in.
// Copilot CLI keeps its provider in the environment only: it is set up
// when COPILOT_PROVIDER_BASE_URL is the gateway's (GatewayBase: /v1, or
// the root with the anthropic type, which appends /v1/messages).
func CopilotState(getenv func(string) string) (state, where string) {
	path := "/v1"
	if getenv("COPILOT_PROVIDER_TYPE") == CopilotAnthropic {
		path = ""
	}
	shown, ok := GatewayBase(getenv("COPILOT_PROVIDER_BASE_URL"), path)
	if !ok {
		return "", ""
	}
	state = "api key"
	if getenv("COPILOT_PROVIDER_BEARER_TOKEN") != "" {
		state = "bearer token"
	}
	return state, "environment (COPILOT_PROVIDER_BASE_URL=" + shown + ")"
}
