package gemini

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/spillway/spillway/internal/wire"
)

// CodeAssistPrefix is where the gateway serves the Code Assist API
// (CODE_ASSIST_ENDPOINT=http://HOST:PORT, the API version v1internal):
// POST /v1internal:METHOD.
const CodeAssistPrefix = "/v1internal"

// CodeAssistEndpoints are its generate methods: a Gemini request wrapped as
// {model, project, user_prompt_id, request}, its answer's chunks under
// "response"; the model is the body's, sent only to the codeassist
// provider (config.CodeAssist).
var CodeAssistEndpoints = []wire.Endpoint{
	{Path: CodeAssistPrefix + ":generateContent", Format: wire.Gemini, Kind: wire.GenerateContent, Upstream: CodeAssistPrefix + ":generateContent", Via: "codeassist"},
	{Path: CodeAssistPrefix + ":streamGenerateContent", Format: wire.Gemini, Kind: wire.StreamGenerateContent, Upstream: CodeAssistPrefix + ":streamGenerateContent", Via: "codeassist"},
}

// methods are the model methods spillway serves on Gemini's paths.
var methods = []string{":generateContent", ":streamGenerateContent", ":countTokens"}

// Call reports whether path calls a Gemini model's method the
// gateway serves (…/models/MODEL:generateContent, :streamGenerateContent
// or :countTokens): under /v1/, where OpenAI's routes are too, only these
// paths are Gemini's.
func Call(path string) bool {
	if PathModel(path) == "" {
		return false
	}
	for _, m := range methods {
		if strings.HasSuffix(path, m) {
			return true
		}
	}
	return false
}

// Endpoint is the endpoint of a Gemini model's method (its Kind:
// generateContent, streamGenerateContent) called at path: under /v1/ its
// Path says /v1/ (what the log and the records name), and it goes upstream
// as under /v1beta/.
func Endpoint(path, method string) (wire.Endpoint, bool) {
	for _, ep := range wire.GeminiEndpoints {
		if string(ep.Kind) == method {
			if strings.HasPrefix(path, "/v1/") {
				ep.Path = "/v1/" + strings.TrimPrefix(ep.Path, "/v1beta/")
			}
			return ep, true
		}
	}
	return wire.Endpoint{}, false
}

// Caller reports whether a request carries Gemini's credential or
// client header (x-goog-api-key, ?key=, x-goog-api-client): on a path
// Gemini shares with OpenAI (GET /v1/models, as @google/genai 3.x lists
// models), it is Google's SDK asking, and the answer is Gemini's.
func Caller(h http.Header, query url.Values) bool {
	return h.Get("X-Goog-Api-Key") != "" || h.Get("X-Goog-Api-Client") != "" || query.Has("key")
}

// PathModel is the model of a Gemini URL path (…/models/MODEL:METHOD), ""
// for a path that names none.
func PathModel(path string) string {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return ""
	}
	model, _, ok := strings.Cut(path[i+len("/models/"):], ":")
	if !ok || strings.Contains(model, "/") {
		return ""
	}
	return model
}

// WithPathModel is path (…/models/MODEL:METHOD) naming model instead
// (path-escaped).
func WithPathModel(path, model string) string {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return path
	}
	rest := path[i+len("/models/"):]
	_, method, _ := strings.Cut(rest, ":")
	return path[:i] + "/models/" + url.PathEscape(model) + ":" + method
}
