package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A ChatGPT plan's Codex backend, as Codex CLI 0.169 signed in with ChatGPT
// calls it (docs/client-notes.md): POST /backend-api/codex/responses with
// Authorization: Bearer <its access token> and chatgpt-account-id, the same
// Responses body as with an API key; its other calls (/models, wham/*,
// ps/mcp) the simulator does not serve.

// Fingerprint names a request's credentials without them: the first 16 hex
// digits of the SHA-256 of the key and the account id ("" without a key).
func Fingerprint(key, account string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key + "\x00" + account))
	return hex.EncodeToString(sum[:8])
}

func (s *Server) handleChatGPTResponses(w http.ResponseWriter, r *http.Request) {
	if bearer(r) == "" || r.Header.Get("Chatgpt-Account-Id") == "" {
		// the backend takes a signed-in token and its account only
		writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": "Unauthorized: this backend needs Authorization: Bearer <ChatGPT access token> and chatgpt-account-id"})
		return
	}
	// its plan's usage windows, as the backend says them with every answer
	// (a usage_limit fault says the primary is used up)
	h := w.Header()
	now := s.clock.Now()
	h.Set("x-codex-primary-used-percent", "12.0")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", strconv.FormatInt(now.Add(4*time.Hour).Unix(), 10))
	h.Set("x-codex-secondary-used-percent", "3.0")
	h.Set("x-codex-secondary-window-minutes", "10080")
	h.Set("x-codex-secondary-reset-at", strconv.FormatInt(now.Add(6*24*time.Hour).Unix(), 10))
	s.handleResponses(w, r)
}

// handleChatGPTOther answers the backend's other paths as not found, the
// way Codex takes a missing /models.
func (s *Server) handleChatGPTOther(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Sim-Path", r.URL.RequestURI()) // so a test sees what reached it
	writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found: " + strings.TrimPrefix(r.URL.Path, "/backend-api")})
}
