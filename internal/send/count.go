package send

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// cloudSigner is a RoundTripper that says whether it authorizes requests
// marked for a cloud (cloud.With) as they leave: cloud.Transport, and the
// wrappers over one that pass the question on.
type cloudSigner interface{ AuthorizesClouds() bool }

// signsFor refuses req, marked for a cloud, when rt does not say it
// authorizes clouds: without the cloud transport the request would leave
// with no credentials (a programming error, which tests catch).
func signsFor(rt http.RoundTripper, req *http.Request) error {
	name, marked := cloud.Marked(req.Context())
	if !marked {
		return nil
	}
	if s, ok := rt.(cloudSigner); ok && s.AuthorizesClouds() {
		return nil
	}
	return fmt.Errorf("spillway: provider %s is a cloud, and this request's transport does not sign for clouds", name)
}

// Counted is a cloud's answer to a token count: the answer, and the
// count it gives (0 when it gives none).
type Counted struct {
	*Probed
	Tokens int
	// Call is the request's method and path, as sent (escaped).
	Call string
	// Error is what the cloud said of a count it did not give (a status
	// not 2xx), in words fit for a client: a refusal of spillway's
	// credentials named, not quoted; an ARN's account hidden.
	Error string
}

// CountTokens asks cand's provider, a cloud, to count the tokens of body, a
// request body of cand's format (a Messages body for Anthropic's models),
// with the betas of header's anthropic-beta (header may be nil); with a
// nil body, of the smallest prompt for cand's model (what doctor asks). It
// is a call that costs no tokens (Bedrock's CountTokens, Anthropic's
// count-tokens rawPredict on Vertex AI, Gemini's countTokens on Vertex
// AI), built in the cloud's envelope as every attempt is: body's model
// becomes cand's upstream id, and Bedrock's InvokeModel body gets the
// max_tokens it needs when body has none (Anthropic's count takes none). It
// is authorized by rt, which must sign for clouds (cloud.Transport); none
// of header's credentials go (only its betas are read).
func CountTokens(ctx context.Context, rt http.RoundTripper, cfg *config.Config, cand policy.Candidate, body []byte, header http.Header) (*Counted, error) {
	prov, ok := cfg.Providers[cand.Provider]
	if !ok {
		return nil, fmt.Errorf("spillway: no provider %q configured for model %s", cand.Provider, cand.Model)
	}
	if prov.Cloud() == "" {
		return nil, fmt.Errorf("spillway: provider %s is not a cloud: it has no token count spillway asks for", cand.Provider)
	}
	env, ok := formats.EnvelopeOf(cand.Format)
	if !ok {
		return nil, fmt.Errorf("spillway: no prompt endpoint for %s models", cand.Format)
	}
	ep := env.PromptEndpoint()
	payload := body
	if payload == nil {
		payload = formats.WireOf(ep).Prompt(wire.Prompt{User: "ping", MaxTokens: 1}, cand.Upstream)
	} else if !ep.ModelInPath { // the body names its model: the deployment's id
		model, err := json.Marshal(cand.Upstream)
		if err != nil {
			return nil, err
		}
		add := []format.Member{{Name: "model", Value: model}}
		if prov.Type == config.Bedrock { // (InvokeModel needs one; the count ignores it)
			add = append(add, format.Member{Name: "max_tokens", Value: []byte("1")})
		}
		if payload, err = format.Reshape(payload, []string{"model"}, add...); err != nil {
			return nil, fmt.Errorf("spillway: the body to count: %w", err)
		}
	}
	h := http.Header{}
	if beta := header.Values("Anthropic-Beta"); len(beta) > 0 {
		h["Anthropic-Beta"] = beta
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	req, err := cloudRequest(ctx, cand.Provider, prov, cand, cloudCall{ep: ep, payload: payload, header: h, count: true})
	if err != nil {
		return nil, err
	}
	ans, err := send(rt, req)
	if err != nil {
		return nil, err
	}
	c := &Counted{Probed: ans, Call: req.Method + " " + req.URL.EscapedPath()}
	var n struct {
		Bedrock int `json:"inputTokens"`  // Bedrock
		Claude  int `json:"input_tokens"` // Anthropic's, on Vertex AI
		Gemini  int `json:"totalTokens"`  // Gemini's, on Vertex AI
	}
	if ans.Status/100 == 2 && json.Unmarshal(ans.Body, &n) == nil {
		c.Tokens = max(n.Bedrock, n.Claude, n.Gemini)
	}
	if ans.Status/100 != 2 {
		v := classify.Verdict{Status: ans.Status, Code: ans.Header.Get("X-Amzn-Errortype"), Message: errorWords(ans.Body)}
		if ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden {
			v.Class = classify.Auth
		}
		c.Error = cloudMessage(cand, v)
	}
	return c, nil
}

// errorWords is the message of a cloud's error body (Bedrock's
// {"message"}, Google's {"error":{"message"}}), at most 300 bytes (valid
// UTF-8, "…" when cut: format.Cut); the body's first bytes when it has
// none.
func errorWords(b []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	msg := cmp.Or(e.Message, e.Error.Message, strings.TrimSpace(string(b)))
	return format.Cut(msg, 300)
}
