package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/internal/words"
)

// presented is the key a request carries where its SDK sends the
// provider's: Authorization: Bearer (OpenAI), x-api-key (Anthropic),
// x-goog-api-key, or ?key= on a Gemini route only (formatOf: under
// /v1beta/ and Gemini's routes under /v1/): only Gemini's clients send a
// key in the URL, where proxies and browsers' histories keep it, and a key
// of another route's URL is not taken for one.
func presented(r *http.Request) string {
	if b := bearer(r); b != "" {
		return b
	}
	for _, k := range []string{r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key")} {
		if k != "" {
			return k
		}
	}
	return formats.Envelope(formatOf(r).Format).QueryKey(r.URL.Query())
}

// callerSecrets are what of a request's own sign-in must reach no record,
// log line or answer of spillway's: the key or token it presented (and a
// ?key= of any route, which passes on in the query), and a ChatGPT plan's
// account id (Codex's ChatGPT-Account-Id), which a backend may echo in its
// errors.
func callerSecrets(r *http.Request) []string {
	return []string{presented(r), r.URL.Query().Get("key"), r.Header.Get("Chatgpt-Account-Id")}
}

// keyOf is the gateway key a request presents, when keys are configured:
// nil and true without keys; nil and false for a missing or unknown key.
func keyOf(cfg *config.Config, r *http.Request) (*config.GatewayKey, bool) {
	if len(cfg.Gateway.Keys) == 0 {
		return nil, true
	}
	got := presented(r)
	if got == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(got))
	h := hex.EncodeToString(sum[:])
	for i := range cfg.Gateway.Keys {
		k := &cfg.Gateway.Keys[i]
		if subtle.ConstantTimeCompare([]byte(h), []byte(k.Hash)) == 1 {
			return k, true
		}
	}
	return nil, false
}

// slots counts each key's requests in flight, for its concurrency cap.
type slots struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *slots) take(name string, limit int) (release func(), ok bool) {
	if limit <= 0 {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[name] >= limit {
		return nil, false
	}
	s.n[name]++
	return func() {
		s.mu.Lock()
		s.n[name]--
		s.mu.Unlock()
	}, true
}

// refuse answers a request the gateway's keys refuse, in ep's shape;
// retryAfter > 0 says when to come back (a concurrency cap: soon; a daily
// budget: at midnight UTC), and every refusal tells SDKs not to retry on
// their own.
func refuse(w http.ResponseWriter, ep wire.Endpoint, status int, class classify.Class, msg string, retryAfter time.Duration) {
	_, body := formats.WireOf(ep).ErrorBody(class, msg)
	if status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		body = formats.WireOf(ep).StatusBody(status, msg) // not a bad key, not a bad request: what the status says
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter.Round(time.Second)/time.Second)))
	}
	w.WriteHeader(status)
	w.Write(body)
}

// admit checks a request's gateway key and takes its concurrency slot; it
// answers a refusal itself (401 without a valid key, 429 past the key's
// cap) and reports false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, ep wire.Endpoint) (key *config.GatewayKey, release func(), ok bool) {
	key, ok = keyOf(s.stateOf(r.Context()).cfg, r)
	if !ok {
		// the connection goes with the answer: net/http would otherwise
		// read up to 256 KB of the unread body of a client that has no key
		w.Header().Set("Connection", "close")
		where := "sent where your SDK sends its API key"
		switch ep.Cloud {
		case config.Bedrock:
			where = "sent as Authorization: Bearer (Claude Code: AWS_BEARER_TOKEN_BEDROCK, without CLAUDE_CODE_SKIP_BEDROCK_AUTH)"
		case config.Vertex:
			where = `sent as Authorization: Bearer (Claude Code: ANTHROPIC_CUSTOM_HEADERS="Authorization: Bearer KEY", with CLAUDE_CODE_SKIP_VERTEX_AUTH)`
		}
		refuse(w, ep, http.StatusUnauthorized, classify.Auth, "spillway: this gateway needs a gateway key (gateway.keys), "+where+"; the one sent is missing or not known", 0)
		s.log.Info("request", "endpoint", r.URL.Path, "outcome", "refused", "status", http.StatusUnauthorized, "why", "no known gateway key")
		return nil, nil, false
	}
	if key == nil {
		return nil, func() {}, true
	}
	if over, err := s.overBudget(r, key); err != nil {
		s.log.Error("gateway key usage not read; the request goes on", "key", key.Name, "error", err.Error())
	} else if over {
		now := s.eng().Clock().Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		refuse(w, ep, http.StatusTooManyRequests, classify.Quota, fmt.Sprintf("spillway: key %s has used its %d tokens for today (gateway.keys daily_tokens); it resets at 00:00 UTC", key.Name, key.DailyTokens), midnight.Sub(now))
		s.log.Info("request", "endpoint", r.URL.Path, "key", key.Name, "outcome", "refused", "status", http.StatusTooManyRequests, "why", "daily_tokens")
		return nil, nil, false
	}
	release, ok = s.slots.take(key.Name, key.Concurrency)
	if !ok {
		refuse(w, ep, http.StatusTooManyRequests, classify.RateLimit, fmt.Sprintf("spillway: key %s has %s in flight, its limit (gateway.keys concurrency); retry when one ends", key.Name, words.Count(key.Concurrency, "request")), time.Second)
		s.log.Info("request", "endpoint", r.URL.Path, "key", key.Name, "outcome", "refused", "status", http.StatusTooManyRequests, "why", "concurrency")
		return nil, nil, false
	}
	return key, release, true
}

// allowed reports whether key may use model: the model's chain is one of
// the key's chains (any, when it names none).
func allowed(cfg *config.Config, key *config.GatewayKey, model string) (string, bool) {
	if key == nil || len(key.Chains) == 0 {
		return "", true
	}
	chain, _ := cfg.ChainFor(model)
	return chain, slices.Contains(key.Chains, chain)
}

// Usage keeps the gateway keys' daily tokens (the queue's database does:
// queue.Store). Day is YYYY-MM-DD, UTC.
type Usage interface {
	KeyUsed(ctx context.Context, name, day string) (int64, error)
	KeyAdd(ctx context.Context, name, day string, n int64) error
}

// overBudget reports whether key has used its daily tokens.
func (s *Server) overBudget(r *http.Request, key *config.GatewayKey) (bool, error) {
	if key == nil || key.DailyTokens <= 0 || s.usage == nil {
		return false, nil
	}
	used, err := s.usage.KeyUsed(r.Context(), key.Name, s.eng().Clock().Now().UTC().Format(time.DateOnly))
	return used >= key.DailyTokens, err
}

// spend adds a request's tokens to its key's day.
func (s *Server) spend(key *config.GatewayKey, tokens int64) {
	if key == nil || key.DailyTokens <= 0 || s.usage == nil || tokens <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.usage.KeyAdd(ctx, key.Name, s.eng().Clock().Now().UTC().Format(time.DateOnly), tokens); err != nil {
		s.log.Error("gateway key usage not saved", "key", key.Name, "error", err.Error())
	}
}

// keyCtx keys the gateway key a listing was asked with.
type keyCtx struct{}

// keyIn is the gateway key of a request keyed put in its context (nil:
// none, or no keys).
func keyIn(r *http.Request) *config.GatewayKey {
	k, _ := r.Context().Value(keyCtx{}).(*config.GatewayKey)
	return k
}

// bearer is the token of an Authorization: Bearer header, "" without one.
func bearer(r *http.Request) string { return wire.Bearer(r.Header) }
