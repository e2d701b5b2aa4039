package sim

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
)

// The clouds (Amazon Bedrock, Google Vertex AI) serve the vendors' models
// from pools of their own: a model's Bedrock pool is named bedrock/MODEL
// and its Vertex AI pool vertex/MODEL (MODEL the vendor's name, as the
// Anthropic API or the Gemini API calls it), in stats, faults and a
// scenario's models. Every Anthropic model is served on both clouds, every
// Gemini model on Vertex AI; a configured deployment on a cloud provider
// adds its model there under the name its upstream id maps to.

// Cloud pool name prefixes.
const (
	bedrockPool = "bedrock/"
	vertexPool  = "vertex/"
)

// The wire formats of cloud pools (modelInfo.provider): none of the
// vendors' own endpoints serves them.
const (
	wireBedrock         = "bedrock"
	wireVertexAnthropic = "vertex-anthropic"
	wireVertexGemini    = "vertex-gemini"
)

// CloudAuth says which credentials the cloud endpoints accept; its zero
// value accepts any (and none).
type CloudAuth struct {
	// AWS, when set, are the only credentials a Bedrock request may be
	// signed with (SigV4, verified over the bytes received).
	AWS *AWSCredentials
	// BedrockAPIKey, when set, is the only Bedrock API key (Authorization:
	// Bearer) accepted.
	BedrockAPIKey string
	// GoogleServiceAccount makes the simulator a service account of its
	// own (ServiceAccountJSON): Vertex AI requests then need an access
	// token its /token endpoint issued, not yet expired.
	GoogleServiceAccount bool
	// TokenLifetime is how long an access token lasts, on the simulator's
	// clock (default an hour).
	TokenLifetime time.Duration
}

// AWSCredentials are test AWS credentials.
type AWSCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// cloudAuth is the credential state every region shares: a token issued
// at one region's /token is good at every other.
type cloudAuth struct {
	opts CloudAuth
	sa   *serviceAccount // nil without GoogleServiceAccount

	mu     sync.Mutex
	tokens map[string]time.Time // access token → expiry (simulator's clock)
}

var (
	dateSuffix = regexp.MustCompile(`-\d{8}$`)
)

// vertexVendor is the vendor's name of a Vertex AI model id: without its
// @version.
func vertexVendor(id string) string {
	name, _, _ := strings.Cut(id, "@")
	return name
}

// addCloudModels registers the cloud pools: every Anthropic model on
// Bedrock and Vertex AI, every Gemini model on Vertex AI, and the models
// cfg deploys on cloud providers.
func (s *Server) addCloudModels(cfg *config.Config) {
	for _, m := range s.sortedModels("") {
		switch m.provider {
		case "anthropic":
			s.addCloudModel(bedrockPool+m.name, wireBedrock, m)
			s.addCloudModel(vertexPool+m.name, wireVertexAnthropic, m)
		case "gemini":
			s.addCloudModel(vertexPool+m.name, wireVertexGemini, m)
		}
	}
	for name, m := range cfg.Models {
		info := modelInfo{tier: string(m.Tier), context: m.Context}
		for _, d := range cfg.Deployments(name) {
			switch cfg.Providers[d.Provider].Cloud() {
			case config.Bedrock:
				s.addCloudModel(bedrockPool+config.BedrockVendor(d.Upstream), wireBedrock, info)
			case config.Vertex:
				wire := wireVertexAnthropic
				if config.VertexPublisher(d.Upstream) == "google" {
					wire = wireVertexGemini
				}
				s.addCloudModel(vertexPool+vertexVendor(d.Upstream), wire, info)
			}
		}
	}
}

func (s *Server) addCloudModel(name, wire string, m modelInfo) {
	if _, ok := s.models[name]; !ok {
		s.models[name] = modelInfo{name: name, provider: wire, tier: m.tier, context: m.context}
	}
}

// cloudModel finds the pool of vendor model name on a cloud (prefix
// bedrockPool or vertexPool): its exact name, else without a date suffix.
func (s *Server) cloudModel(prefix, name, wire string) (modelInfo, bool) {
	for _, n := range []string{name, dateSuffix.ReplaceAllString(name, "")} {
		if m, ok := s.models[prefix+n]; ok && m.provider == wire {
			return m, true
		}
	}
	return modelInfo{}, false
}

// origPathKey carries the escaped path a request came with, before a
// region's prefix was taken off: a signature covers the whole of it.
type origPathKey struct{}

// stripRegion serves h under /name, as http.StripPrefix does, keeping the
// path as received for the signature checks.
func stripRegion(name string, h http.Handler) http.Handler {
	inner := http.StripPrefix("/"+name, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), origPathKey{}, r.URL.EscapedPath())
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
}

// receivedPath is the escaped path r came with.
func receivedPath(r *http.Request) string {
	if p, ok := r.Context().Value(origPathKey{}).(string); ok {
		return p
	}
	return r.URL.EscapedPath()
}

// vendorModel is the model an answer names: the vendor's name, without
// the cloud's pool prefix (Bedrock's and Vertex AI's answers name the
// model as the vendor does).
func (c *call) vendorModel() string {
	if cloudOf(c) == nil {
		return c.model.name
	}
	_, name, _ := strings.Cut(c.model.name, "/")
	return name
}
