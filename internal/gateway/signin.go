package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/gemini"
	respfmt "github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/wire"
)

// The sign-in routes: an agent signed in with its own plan (Codex with a
// ChatGPT plan) points its provider at the gateway, and its own token goes
// through to its own backend, untouched. POST …/responses goes through the
// driver, walking the plan's models on the plan's backend only
// (policy.Request.Via); every other path under the prefix (the model list,
// usage, whatever comes next) goes to the same host as it came.
//
// What never happens with such a credential: it goes to no host but its
// backend (no redirect is followed), it is written nowhere (records, logs
// and errors are redacted of it; the pace key is the gateway's own, not
// derived from it), it is used for no request the client did not make (no
// hedge, no continuation, no probe or check of spillway's own), and it is
// never shared: the routes are refused on a gateway that listens beyond
// loopback or has gateway.keys. They never answer 401 of their own (a 401
// sends Codex to refresh its token).

// signInRefused answers 403 when this gateway serves others, and reports
// whether it did.
func (s *Server) signInRefused(w http.ResponseWriter, r *http.Request, ep wire.Endpoint) bool {
	cfg := s.stateOf(r.Context()).cfg
	why := ""
	switch {
	case len(cfg.Gateway.Keys) > 0:
		why = "it has gateway.keys"
	case s.exposed.Load():
		why = "it listens beyond loopback"
	default:
		return false
	}
	w.Header().Set("Connection", "close")
	refuse(w, ep, http.StatusForbidden, classify.BadRequest, fmt.Sprintf("spillway: this gateway does not carry a personal sign-in (%s): one person's plan is not a team's; point the agent at a gateway on 127.0.0.1 of its own, or use an API key", why), 0)
	s.log.Info("request", "endpoint", r.URL.Path, "outcome", "refused", "status", http.StatusForbidden, "why", "sign-in on a shared gateway")
	return true
}

// handleChatGPT serves the plan's Responses endpoint through the driver
// (whose proxy refuses a sign-in on a gateway that serves others).
func (s *Server) handleChatGPT(w http.ResponseWriter, r *http.Request) {
	s.proxy(w, r, respfmt.ChatGPT)
}

// handleChatGPTOther passes any other request under the plan's prefix to
// the plan's host as it came.
func (s *Server) handleChatGPTOther(w http.ResponseWriter, r *http.Request) {
	s.passSignIn(w, r, config.ChatGPT, respfmt.ChatGPTPrefix, wire.Endpoint{Path: r.URL.Path, Format: wire.OpenAI, Kind: wire.Responses, Via: config.ChatGPT})
}

// handleCodeAssist serves the Code Assist API: its generate methods
// through the driver, every other method (loadCodeAssist, onboardUser,
// countTokens, retrieveUserQuota, listExperiments, …) passed through.
func (s *Server) handleCodeAssist(w http.ResponseWriter, r *http.Request) {
	ep := wire.Endpoint{Path: r.URL.Path, Format: wire.Gemini, Kind: wire.GenerateContent, Via: config.CodeAssist}
	if r.Method == http.MethodPost {
		for _, gen := range gemini.CodeAssistEndpoints {
			if r.URL.Path == gen.Path {
				s.proxy(w, r, gen)
				return
			}
		}
	}
	s.passSignIn(w, r, config.CodeAssist, "", ep)
}

// passSignIn passes a request to the sign-in provider's host as it came
// (the same method, path after prefix, query, headers and body), and its
// answer back as it came.
func (s *Server) passSignIn(w http.ResponseWriter, r *http.Request, provider, prefix string, ep wire.Endpoint) {
	r = s.pin(r) // one configuration for the whole request
	st := s.stateOf(r.Context())
	if s.signInRefused(w, r, ep) {
		return
	}
	cfg := st.cfg
	base, err := url.Parse(strings.TrimSuffix(cfg.Providers[provider].BaseURL, "/"))
	if err != nil || base.Host == "" {
		reject(w, ep, http.StatusBadGateway, fmt.Sprintf("spillway: providers.%s.base_url is not a URL", provider))
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, prefix)
	if why := unsafePath(rest); why != "" {
		reject(w, ep, http.StatusBadRequest, "spillway: "+why+" is not passed to the sign-in's backend; nothing was sent")
		return
	}
	// the body is read whole first (in the gateway's room, like every
	// route's): one over gateway.max_body_mb is refused (413) before any
	// byte of it is sent
	r, held, ok := s.hold(w, r, ep, st)
	defer s.giveHeld(held)
	if !ok {
		return
	}
	raw, outcome := readBody(w, r, ep, st)
	if outcome != "" {
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	proxy := &httputil.ReverseProxy{
		Transport: s.rt,
		Rewrite: func(pr *httputil.ProxyRequest) {
			// (no X-Forwarded-*: the request is the client's own)
			pr.Out.URL.Scheme, pr.Out.URL.Host = base.Scheme, base.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = base.Path+rest, ""
			pr.Out.URL.RawQuery = r.URL.RawQuery
			pr.Out.Host = base.Host
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "X-Spillway-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// never a 401 of spillway's own here; the error redacted
			reject(w, ep, http.StatusBadGateway, "spillway: the sign-in's backend could not be reached: "+redact.String(err.Error()))
		},
	}
	proxy.ServeHTTP(w, r)
}

// unsafePath says why a sign-in's pass-through path (decoded) may mean
// something else to someone else, "" when it may not: a segment that
// climbs out of the prefix (an escaped ".." the mux did not clean), or a
// backslash (a path separator to some servers), a semicolon (path
// parameters, which some servers cut the path at) or NUL (the end of a
// string to others), sent raw or percent-encoded in any case of the hex,
// also encoded twice (the decoded path holds "%5c").
func unsafePath(p string) string {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return "a path with . or .. segments"
		}
	}
	if strings.ContainsAny(p, "\\;\x00") {
		return `a path with \, ; or NUL`
	}
	low := strings.ToLower(p)
	for _, enc := range []string{"%5c", "%3b", "%00", "%2e"} {
		if strings.Contains(low, enc) {
			return "a path with an encoded " + enc
		}
	}
	return ""
}
