package send

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/format/vertex"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// cloudCall is what an attempt to a model on a cloud provider carries: a
// request body of the candidate's format for endpoint ep (Messages, or a
// Gemini method), whether it streams, and the headers it was made with
// (the caller's, or a translation's) and its query, of which the cloud
// gets only what it takes.
type cloudCall struct {
	ep      wire.Endpoint
	payload []byte
	stream  bool
	header  http.Header
	query   url.Values
	// count: the cloud's token count of payload instead (CountTokens),
	// which costs no tokens
	count bool
}

// cloudRequest is the request of an attempt to cand on prov, a cloud
// provider: the payload in the cloud's envelope (the model in the path,
// the body made the cloud's), at the provider's base URL and query, with
// none of the caller's credentials or vendor headers, its context marked
// for the cloud's credentials (cloud.With), which the sending transport
// adds as it leaves.
func cloudRequest(ctx context.Context, name string, prov config.Provider, cand policy.Candidate, c cloudCall) (*http.Request, error) {
	base, err := url.Parse(strings.TrimSuffix(prov.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("spillway: provider %s: base_url %q: %w", name, prov.BaseURL, err)
	}
	q, _ := url.ParseQuery(strings.TrimPrefix(prov.Query, "?"))
	h := http.Header{"Content-Type": {"application/json"}}
	if ua := c.header.Get("User-Agent"); ua != "" {
		h.Set("User-Agent", ua)
	}
	var raw, escaped string
	body := c.payload
	switch prov.Type {
	case config.Bedrock:
		// InvokeModel: the Messages body, the model (an id, a profile or
		// an ARN) escaped in the path, the betas in the body
		raw, escaped = bedrock.Path(cand.Upstream, c.stream)
		if body, err = bedrock.Body(c.payload, c.header); err != nil {
			return nil, fmt.Errorf("spillway: %s on %s: %w", cand.Model, name, err)
		}
		h.Set("Accept", "application/json")
		if c.count { // the InvokeModel body, in CountTokens' input
			raw, escaped = bedrock.CountTokensPath(cand.Upstream)
			body = bedrock.CountTokensBody(body)
		} else if c.stream {
			h.Set("Accept", bedrock.ContentType)
		}
	case config.Vertex:
		publisher := config.VertexPublisher(cand.Upstream)
		model, method := cand.Upstream, ""
		switch {
		case publisher == "anthropic" && c.count:
			// Anthropic's token count: a model of its own, the model named
			// in the body
			model, method = "count-tokens", vertex.RawPredict
			if body, err = vertex.CountTokensBody(c.payload); err != nil {
				return nil, fmt.Errorf("spillway: %s on %s: %w", cand.Model, name, err)
			}
			if beta := c.header.Values("Anthropic-Beta"); len(beta) > 0 {
				h["Anthropic-Beta"] = beta // (a beta's tools count as it defines them)
			}
		case publisher == "anthropic":
			method = vertex.RawPredict
			if c.stream {
				method = vertex.StreamRawPredict
				h.Set("Accept", "text/event-stream")
			}
			if body, err = vertex.Body(c.payload); err != nil {
				return nil, fmt.Errorf("spillway: %s on %s: %w", cand.Model, name, err)
			}
			if beta := c.header.Values("Anthropic-Beta"); len(beta) > 0 {
				h["Anthropic-Beta"] = beta // Vertex AI takes Anthropic's betas as a header
			}
		case publisher == "google":
			// Gemini's method is the endpoint's (generateContent,
			// streamGenerateContent, countTokens); an SSE stream keeps its alt
			_, method, _ = strings.Cut(c.ep.Upstream, ":")
			if c.count {
				method = "countTokens"
			}
			if alt := c.query.Get("alt"); alt != "" {
				q.Set("alt", alt)
			}
		default:
			return nil, fmt.Errorf("spillway: %s: Vertex AI has no publisher spillway knows for model %q", name, cand.Upstream)
		}
		// (vertex.Path escapes each segment)
		escaped = vertex.Path(prov.Project, prov.Region, publisher, model, method)
		if raw, err = url.PathUnescape(escaped); err != nil {
			return nil, fmt.Errorf("spillway: %s on %s: %w", cand.Model, name, err)
		}
	default:
		return nil, fmt.Errorf("spillway: provider %s (type %s) is not a cloud", name, prov.Type)
	}
	u := *base
	u.Path = base.Path + raw
	u.RawPath = base.EscapedPath() + escaped // ":" and "/" of a model id stay escaped on the wire
	u.RawQuery = q.Encode()
	up, err := http.NewRequestWithContext(cloud.With(ctx, name, prov), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	up.URL = &u // (String and back would lose nothing, but the escaping is the cloud's: keep it as built)
	up.Header = h
	up.ContentLength = int64(len(body))
	return up, nil
}

// classifyAs is the provider whose error shapes cand's answers come in:
// its cloud's (Bedrock, Vertex AI, Azure), else its format's.
func classifyAs(cand policy.Candidate) classify.Provider {
	if cand.Cloud != "" {
		return classify.Provider(cand.Cloud)
	}
	return classify.Provider(cand.Format)
}

// isOwnCloud reports whether cand is a model on a cloud provider (Bedrock,
// Vertex AI), whose envelope and credentials are spillway's.
func isOwnCloud(cand policy.Candidate) bool {
	return cand.Cloud == config.Bedrock || cand.Cloud == config.Vertex
}

// cloudHeader removes a cloud's own headers from its answer
// (x-amzn-requestid, x-amzn-bedrock-*, x-goog-*): the client called the
// vendor's API, not the cloud's.
func cloudHeader(h http.Header) { dropHeaders(h, "x-amzn-", "x-amz-", "x-goog-") }

// cloudMessage is what the client and the records are told of v, a cloud's
// error for cand. A refusal of spillway's credentials says which provider
// refused them and what the cloud called it, and none of the cloud's words,
// which name the account (Bedrock's AccessDenied names the caller's role
// ARN); another error keeps its words, the account id of any ARN in them
// hidden.
func cloudMessage(cand policy.Candidate, v classify.Verdict) string {
	if v.Class == classify.Auth {
		what := cmp.Or(v.Code, fmt.Sprintf("HTTP %d", v.Status))
		return fmt.Sprintf("provider %s's own cloud credentials were refused (%s); see spillway doctor", cand.Provider, what)
	}
	return arnAccount.ReplaceAllString(v.Message, "${1}…:")
}

// arnAccount matches the account id of an AWS ARN
// (arn:aws:sts::123456789012:assumed-role/…), with what comes before it.
var arnAccount = regexp.MustCompile(`(arn:aws[a-z-]*:[a-z0-9-]*:[a-z0-9-]*:)[0-9]{12}:`)
