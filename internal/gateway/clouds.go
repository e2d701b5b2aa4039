package gateway

// The cloud front ends: Anthropic's models as Amazon Bedrock and Google
// Vertex AI serve them, for Claude Code in its cloud modes
// (CLAUDE_CODE_USE_BEDROCK, CLAUDE_CODE_USE_VERTEX) and the clouds' SDKs
// pointed at the gateway. A request is read as the /v1/messages request it
// stands for (the model its path names, put in the body) and walks that
// model's chain like any other; its answer goes back in the cloud's
// envelope (bedrock.Answer, vertex.Answer), wrapped around the client's
// writer for the whole request, so that every answer of the gateway's on
// these paths (a refusal, a give-up, a relayed stream) is the cloud's.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/format/vertex"
	"github.com/spillway/spillway/internal/wire"
)

// The path prefixes of the cloud front ends. Each is served at the
// gateway's root too (/model/…, /inference-profiles, /v1/projects/…): the
// Anthropic SDKs' Bedrock and Vertex AI clients (Go's) replace a base
// URL's whole path with the cloud's.
const (
	bedrockPrefix = "/bedrock/"
	vertexPrefix  = "/vertex/"
)

// cloudOf is the cloud whose envelope a request on path is answered in
// ("" for a vendor's path).
func cloudOf(path string) string {
	switch {
	case strings.HasPrefix(path, bedrockPrefix), strings.HasPrefix(path, "/model/"),
		path == "/inference-profiles", strings.HasPrefix(path, "/inference-profiles/"):
		return config.Bedrock
	case strings.HasPrefix(path, vertexPrefix), strings.HasPrefix(path, "/v1/projects/"):
		return config.Vertex
	}
	return ""
}

// closingWriter is a cloud's answer: a ResponseWriter that must be closed
// once the handler is done.
type closingWriter interface {
	http.ResponseWriter
	Close() error
}

// cloudAnswers wraps every request on a cloud's path in that cloud's
// answer (bedrock.Answer, vertex.Answer), outside everything else, so
// that every answer on it (the guard's refusals too) is in the cloud's
// shape.
func cloudAnswers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a closingWriter
		switch cloudOf(r.URL.Path) {
		case config.Bedrock:
			a = bedrock.NewAnswer(w)
		case config.Vertex:
			a = vertex.NewAnswer(w)
		default:
			h.ServeHTTP(w, r)
			return
		}
		defer a.Close()
		h.ServeHTTP(a, r)
	})
}

// cloudEndpoint is the cloud front end of cloud whose path says stream.
func cloudEndpoint(cloud string, stream bool) wire.Endpoint {
	for _, ep := range wire.CloudEndpoints {
		if ep.Cloud == cloud && ep.Stream == stream {
			return ep
		}
	}
	panic("gateway: no cloud endpoint for " + cloud) // wire.CloudEndpoints has each
}

// handleBedrock serves POST /bedrock/model/{model}/{op} (and /model/… at
// the root): invoke,
// invoke-with-response-stream (through the driver) and count-tokens.
func (s *Server) handleBedrock(w http.ResponseWriter, r *http.Request) {
	r = s.pin(r)
	switch op := r.PathValue("op"); op {
	case "invoke", "invoke-with-response-stream":
		s.proxy(w, r, cloudEndpoint(config.Bedrock, op != "invoke"))
	case "count-tokens":
		s.countFor(w, r, config.Bedrock, r.PathValue("model"))
	default:
		refuse(w, cloudEndpoint(config.Bedrock, false), http.StatusNotFound, classify.ModelNotFound,
			fmt.Sprintf("spillway: /bedrock/model/MODEL/%s: the gateway serves invoke, invoke-with-response-stream and count-tokens of Bedrock's runtime API (not Converse)", op), 0)
	}
}

// handleVertex serves POST /vertex/[v1/]projects/P/locations/R/publishers/anthropic/models/CALL:
// MODEL:rawPredict and MODEL:streamRawPredict through the driver, and
// count-tokens:rawPredict. The project and region are the client's: the
// model's deployments say where it goes.
func (s *Server) handleVertex(w http.ResponseWriter, r *http.Request) {
	r = s.pin(r)
	ep := cloudEndpoint(config.Vertex, false)
	publisher, call, ok := vertexCall(r.URL.Path)
	switch {
	case !ok:
		refuse(w, ep, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: no route for POST %s; the gateway serves Vertex AI's /v1/projects/P/locations/R/publishers/anthropic/models/MODEL:rawPredict, :streamRawPredict and count-tokens:rawPredict under /vertex", r.URL.Path), 0)
		return
	case publisher != "anthropic":
		refuse(w, ep, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: the gateway serves Anthropic's models on its Vertex AI route (publishers/anthropic), not publishers/%s; point a Gemini client at the gateway's root instead", publisher), 0)
		return
	}
	model, method, _ := strings.Cut(call, ":")
	r.SetPathValue("model", model)
	switch {
	case model == "count-tokens" && method == vertex.RawPredict:
		s.countFor(w, r, config.Vertex, "")
	case method == vertex.RawPredict || method == vertex.StreamRawPredict:
		s.proxy(w, r, cloudEndpoint(config.Vertex, method == vertex.StreamRawPredict))
	default:
		refuse(w, ep, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: %s: the gateway serves rawPredict, streamRawPredict and count-tokens:rawPredict of Anthropic's models on Vertex AI", call), 0)
	}
}

// vertexCall reads a Vertex AI model path, under /vertex/ or at the root
// (with or without its API version under /vertex/: v1, v1beta1): the
// publisher and the model's call (MODEL:METHOD), unescaped.
func vertexCall(path string) (publisher, call string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(path, "/vertex"), "/"), "/")
	if len(parts) > 0 && (parts[0] == "v1" || parts[0] == "v1beta1") {
		parts = parts[1:]
	}
	if len(parts) != 8 || parts[0] != "projects" || parts[2] != "locations" || parts[4] != "publishers" || parts[6] != "models" {
		return "", "", false
	}
	for _, p := range parts {
		if p == "" {
			return "", "", false
		}
	}
	return parts[5], parts[7], true
}

// countFor takes a cloud client's token count: its gateway key checked,
// its body read (bounded), the model it names resolved (the path's id on
// Bedrock, the body's "model" on Vertex AI) and allowed for the key, its
// credentials dropped; then cloudCount answers it, the body there to read
// again.
func (s *Server) countFor(w http.ResponseWriter, r *http.Request, cloud, id string) {
	ep := cloudEndpoint(cloud, false)
	st := s.stateOf(r.Context())
	key, release, ok := s.admit(w, r, ep)
	if !ok {
		return
	}
	defer release()
	raw, outcome := readBody(w, r, ep, st)
	if outcome != "" {
		return
	}
	if cloud == config.Vertex {
		b, err := wire.ParseBody(wire.EndpointOf(wire.Messages), raw)
		if err != nil {
			reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
			return
		}
		id = b.Model
	}
	model, ok := cloudModel(w, ep, st.cfg, id)
	if !ok {
		return
	}
	if chain, ok := allowed(st.cfg, key, model); !ok {
		refuse(w, ep, http.StatusForbidden, classify.Auth, fmt.Sprintf("spillway: key %s may use chains %s; %s is in chain %q", key.Name, strings.Join(key.Chains, ", "), model, chain), 0)
		return
	}
	r = dropClientCredentials(r)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	s.cloudCount(w, r, cloud, model)
}

// cloudModel is the configured model a cloud client's request names by
// id (config.CloudModel); false, with the refusal written, for an id that
// names none.
func cloudModel(w http.ResponseWriter, ep wire.Endpoint, cfg *config.Config, id string) (string, bool) {
	if name, ok := cfg.CloudModel(id); ok && id != "" {
		return name, true
	}
	refuse(w, ep, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: model id %q names no model of this gateway's (by name, a deployment's upstream id, or the same model in another cloud's id); spillway config check lists them", id), 0)
	return "", false
}

// cloudRequest is raw, the body of a cloud client's request on ep, as the
// Messages request it stands for (bedrock.ClientRequest,
// vertex.ClientRequest), for model. A Bedrock client's betas are its
// body's anthropic_beta: they replace its anthropic-beta header, whose
// betas (Claude Code's first-party ones) Bedrock never reads.
func cloudRequest(ep wire.Endpoint, r *http.Request, raw []byte, model string) ([]byte, error) {
	if r.Header.Get("Anthropic-Version") == "" {
		r.Header.Set("Anthropic-Version", "2023-06-01") // the Messages API's; the clouds' SDKs send none
	}
	switch ep.Cloud {
	case config.Bedrock:
		msg, betas, err := bedrock.ClientRequest(raw, model, ep.Stream)
		if err != nil {
			return nil, err
		}
		r.Header.Del("Anthropic-Beta")
		if len(betas) > 0 {
			r.Header.Set("Anthropic-Beta", strings.Join(betas, ","))
		}
		return msg, nil
	case config.Vertex:
		return vertex.ClientRequest(raw, model, ep.Stream)
	}
	return raw, nil
}

// dropClientCredentials is r without the client's credentials (a gateway
// key among them was checked before): every key header of the vendors'
// (wire.ClearKeys: Authorization, x-api-key, api-key, x-goog-api-key),
// cookies, X-Amz-* (a SigV4 date, content hash and session token) and
// X-Goog-* (Google's user project and client headers), and its whole
// query (a presigned URL's signature, an access_token, a ?key=: the cloud
// routes take no parameter). A cloud front end sends none of them on.
func dropClientCredentials(r *http.Request) *http.Request {
	r = r.Clone(r.Context())
	wire.ClearKeys(r.Header)
	r.Header.Del("Cookie")
	r.Header.Del("Proxy-Authorization")
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") || strings.HasPrefix(lk, "x-goog-") {
			r.Header.Del(k)
		}
	}
	r.URL.RawQuery = ""
	return r
}
