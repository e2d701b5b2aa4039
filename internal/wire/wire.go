// Package wire holds what spillway knows of the wire that is the same
// for every format: the endpoints as route descriptors (Endpoint, Kind)
// and where each carries its model, how to read a request's model and
// stream flag and give it another model (Body), what one event of a
// stream says (Facts, Frame) and the JSON scanner that finds it (Walker),
// headers, usage decoding, token estimates. What each format is lives in
// its folder under internal/format (format.Wire, format.Envelope).
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/spillway/spillway/config"
)

// Format is a provider's wire format: config.Format, so that the public
// API (policy.Candidate.Format) names no internal type.
type Format = config.Format

// The wire formats.
const (
	OpenAI    = config.OpenAI
	Anthropic = config.Anthropic
	Gemini    = config.Gemini
)

// Kind is an endpoint's kind of request and answer.
type Kind string

// The endpoint kinds.
const (
	Responses             Kind = "responses"
	Chat                  Kind = "chat"
	Embeddings            Kind = "embeddings"
	Messages              Kind = "messages"
	GenerateContent       Kind = "generateContent"
	StreamGenerateContent Kind = "streamGenerateContent"
)

// Streams reports a kind whose requests ask for an event stream whatever
// their body says (Gemini's streamGenerateContent: streaming is its own
// endpoint).
func (k Kind) Streams() bool { return k == StreamGenerateContent }

// Chains reports a kind whose requests may name an earlier answer by
// previous_response_id (Responses).
func (k Kind) Chains() bool { return k == Responses }

// Endpoint is one API route.
type Endpoint struct {
	Path   string // as a client calls it, e.g. /v1/responses
	Format Format
	Kind   Kind
	// Upstream is appended to a provider's base_url; for an endpoint whose
	// model lives in the path, "{model}" stands for it.
	Upstream string
	// ModelInPath: the model is a segment of the URL path, not a field of
	// the JSON body (Gemini).
	ModelInPath bool
	// Via is the sign-in provider whose route this is (config.ChatGPT:
	// Codex signed in with its plan); empty on the APIs' routes.
	Via string
	// Cloud is the cloud whose envelope the route's clients speak
	// (config.Bedrock, config.Vertex: Claude Code in its cloud modes, the
	// clouds' SDKs): the request is the Messages request it stands for,
	// and the answer goes back in the cloud's envelope. Empty on the
	// vendors' routes.
	Cloud string
	// Stream: the path itself asks for a stream (Bedrock's
	// invoke-with-response-stream, Vertex AI's streamRawPredict).
	Stream bool
}

// Endpoints are the routes the gateway serves and the library manages.
var Endpoints = []Endpoint{
	{Path: "/v1/responses", Format: OpenAI, Kind: Responses, Upstream: "/responses"},
	{Path: "/v1/chat/completions", Format: OpenAI, Kind: Chat, Upstream: "/chat/completions"},
	{Path: "/v1/embeddings", Format: OpenAI, Kind: Embeddings, Upstream: "/embeddings"},
	{Path: "/v1/messages", Format: Anthropic, Kind: Messages, Upstream: "/v1/messages"},
}

// GeminiEndpoints carry the model in the path (/v1beta/models/MODEL:METHOD):
// the gateway serves them, and the library manages calls to them.
var GeminiEndpoints = []Endpoint{
	{Path: "/v1beta/models/{model}:generateContent", Format: Gemini, Kind: GenerateContent, Upstream: "/v1beta/models/{model}:generateContent", ModelInPath: true},
	{Path: "/v1beta/models/{model}:streamGenerateContent", Format: Gemini, Kind: StreamGenerateContent, Upstream: "/v1beta/models/{model}:streamGenerateContent", ModelInPath: true},
}

// CloudEndpoints are the routes of Anthropic's models in a cloud's
// envelope (Claude Code with CLAUDE_CODE_USE_BEDROCK or _VERTEX, pointed at
// the gateway): the model is in the path, the answer goes back as the
// cloud gives it (an AWS event stream for Bedrock's stream). The gateway
// reads such a request as the /v1/messages request it stands for (the
// model it names put in the body: not ModelInPath) and sends it on as one.
var CloudEndpoints = []Endpoint{
	{Path: "/bedrock/model/{model}/invoke", Format: Anthropic, Kind: Messages, Upstream: "/v1/messages", Cloud: "bedrock"},
	{Path: "/bedrock/model/{model}/invoke-with-response-stream", Format: Anthropic, Kind: Messages, Upstream: "/v1/messages", Cloud: "bedrock", Stream: true},
	{Path: "/vertex/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict", Format: Anthropic, Kind: Messages, Upstream: "/v1/messages", Cloud: "vertex"},
	{Path: "/vertex/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict", Format: Anthropic, Kind: Messages, Upstream: "/v1/messages", Cloud: "vertex", Stream: true},
}

// AnthropicCaller reports whether a request carries Anthropic's version or
// key header: on a path Anthropic shares with OpenAI (GET /v1/models), the
// answer is Anthropic's.
func AnthropicCaller(h http.Header) bool {
	return h.Get("Anthropic-Version") != "" || h.Get("X-Api-Key") != ""
}

// URL is the upstream URL of ep at a provider's base URL, for model: a
// model in the path is path-escaped (callers refuse a name config.CheckPathModel
// refuses before it comes here).
func (ep Endpoint) URL(base, model string) string {
	path := ep.Upstream
	if ep.ModelInPath {
		path = strings.ReplaceAll(path, "{model}", url.PathEscape(model))
	}
	return strings.TrimSuffix(base, "/") + path
}

// Body is a JSON request body: the caller's bytes, and what routing reads
// of it. Its fields keep their exact keys, as a provider reads them:
// decoding only the fields routing needs into a struct would match "MODEL"
// or "Model" too, and route on a model the provider never sees.
type Body struct {
	Raw    []byte
	Model  string // the body's "model", "" when it has none
	Stream bool
	// Previous is a Responses request's previous_response_id, "" when it
	// has none (a translated answer's is answered at once: Spilled)
	Previous string

	once   sync.Once
	fields map[string]json.RawMessage
}

// ErrNotObject is returned for a body that is not a JSON object.
var ErrNotObject = errors.New("the request body is not a JSON object")

// ParseBody reads raw, a request body for ep: it checks that it is a JSON
// object and takes its "model" and "stream", and a Responses request's
// "previous_response_id" (exact keys; the last of a name that comes twice,
// as a decoder into a map keeps it), in one pass that decodes nothing
// else. A request that goes out as it came (most do)
// never has its fields decoded: see Fields.
func ParseBody(ep Endpoint, raw []byte) (*Body, error) {
	b := &Body{Raw: raw, Stream: ep.Kind.Streams()}
	w := NewWalker(raw)
	if w.Peek() != '{' {
		if w.Skip(); w.err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrNotObject, w.err)
		}
		return nil, ErrNotObject
	}
	stream := b.Stream
	notString := ""
	for name := range w.Fields() {
		switch string(name) {
		case "model":
			b.Model, notString = "", ""
			if c := w.Peek(); c != '"' {
				switch {
				case c == '{':
					notString = "an object"
				case c == '[':
					notString = "a list"
				case c == 't' || c == 'f':
					notString = "true or false"
				case c != 'n': // null: no model
					notString = "a number"
				}
				w.Skip()
				continue
			}
			b.Model = string(w.Text())
		case "stream":
			b.Stream = stream
			switch w.Peek() {
			case 't':
				b.Stream = true
			case 'f':
				b.Stream = false
			}
			w.Skip()
		case "previous_response_id":
			b.Previous = ""
			if !ep.Kind.Chains() || w.Peek() != '"' {
				w.Skip()
				continue
			}
			b.Previous = string(w.Text())
		default:
			w.Skip()
		}
	}
	if w.err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotObject, w.err)
	}
	if !w.End() {
		return nil, fmt.Errorf("%w (something follows the object)", ErrNotObject)
	}
	if notString != "" {
		return nil, fmt.Errorf(`the request's "model" is %s, not a string: name one of the configured models (spillway config check lists them)`, notString)
	}
	return b, nil
}

// Tokens is the body's estimated input tokens (EstimateTokens): what a
// plan asks for a request whose bytes alone pass its smallest window.
func (b *Body) Tokens() int { return EstimateTokens(b.Raw) }

// Fields is the body's top-level fields, decoded on first use: only a
// request that goes to another model, or a continuation, needs them.
func (b *Body) Fields() map[string]json.RawMessage {
	b.once.Do(func() {
		if b.fields == nil {
			_ = json.Unmarshal(b.Raw, &b.fields) // ParseBody checked it is an object
		}
	})
	return b.fields
}

// For is the body to send for model: the caller's bytes when model is the
// one they named (or the model lives in the path), else a copy with
// "model" replaced.
func (b *Body) For(ep Endpoint, model string) ([]byte, error) {
	if ep.ModelInPath || model == b.Model {
		return b.Raw, nil
	}
	m := maps.Clone(b.Fields())
	m["model"], _ = json.Marshal(model)
	return json.Marshal(m)
}

// With is a copy of b with field set to v: a new Body; b is unchanged.
func (b *Body) With(field string, v json.RawMessage) (*Body, error) {
	m := maps.Clone(b.Fields())
	m[field] = v
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Body{Raw: raw, fields: m, Model: b.Model, Stream: b.Stream}, nil
}

// KeyHash identifies a caller's credentials (for per-key pacing) without
// keeping them.
func KeyHash(h http.Header) string {
	sum := sha256.Sum256([]byte(h.Get("Authorization") + "\x00" + h.Get("X-Api-Key") + "\x00" + h.Get("X-Goog-Api-Key")))
	return hex.EncodeToString(sum[:6])
}

// CallerKey identifies a request's credentials (KeyHash), with a Gemini
// caller's ?key= among them.
func CallerKey(r *http.Request) string {
	if k := r.URL.Query().Get("key"); k != "" && r.Header.Get("X-Goog-Api-Key") == "" {
		h := r.Header.Clone()
		h.Set("X-Goog-Api-Key", k)
		return KeyHash(h)
	}
	return KeyHash(r.Header)
}

// Prompt is a small request of one user message, as the queue and the demo
// send.
type Prompt struct {
	System    string
	User      string
	Stream    bool
	MaxTokens int // the answer's cap; Anthropic requires one (4096 when 0), the others none when 0
}

// keyHeaders are where the formats (and Azure) carry credentials.
var keyHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"}

// ClearKeys removes whatever credentials h carries, in any format's header.
func ClearKeys(h http.Header) {
	for _, k := range keyHeaders {
		h.Del(k)
	}
}

// HasKey reports whether h carries credentials.
func HasKey(h http.Header) bool {
	for _, k := range keyHeaders {
		if h.Get(k) != "" {
			return true
		}
	}
	return false
}

// EndpointOf is the endpoint of kind k (the zero Endpoint for a kind no
// endpoint serves).
func EndpointOf(k Kind) Endpoint {
	for _, ep := range append(Endpoints[:len(Endpoints):len(Endpoints)], GeminiEndpoints...) {
		if ep.Kind == k {
			return ep
		}
	}
	return Endpoint{}
}
