package formats

import (
	"strings"

	"github.com/spillway/spillway/internal/format/gemini"
	"github.com/spillway/spillway/internal/wire"
)

// EndpointFor finds the endpoint of a URL path by its ending (a library
// caller's base URL may carry any prefix: /v1/chat/completions,
// /openai/deployments/x/chat/completions).
func EndpointFor(path string) (wire.Endpoint, bool) {
	p := strings.TrimSuffix(path, "/")
	for _, ep := range wire.Endpoints {
		if strings.HasSuffix(p, strings.TrimPrefix(ep.Path, "/v1")) {
			return ep, true
		}
	}
	if model := gemini.PathModel(p); model != "" {
		_, method, _ := strings.Cut(p[strings.LastIndex(p, "/models/")+len("/models/"):], ":")
		for _, ep := range wire.GeminiEndpoints {
			if string(ep.Kind) == method {
				return ep, true
			}
		}
	}
	return wire.Endpoint{}, false
}
