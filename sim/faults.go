package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// FaultKinds are the faults the control API accepts.
var FaultKinds = []string{"capacity", "rate_limit", "quota", "usage_limit", "auth", "server_error", "reset", "stall", "slow", "midstream", "malformed",
	"truncated", "context_length", "content_filter", "bad_request", "model_not_found", "timeout"}

// streamErrors are the errors a midstream fault may send (its error field).
var streamErrors = []string{"capacity", "rate_limit", "server_error", "timeout"}

// Fault is one injected failure, consumed by matching requests.
type Fault struct {
	// Model it applies to; empty or "*" for every model.
	Model string `json:"model"`
	Kind  string `json:"fault"`
	// Count is how many requests it hits; -1 until cleared. 0 means 1.
	Count int `json:"count"`
	// AfterTokens, for reset, stall, midstream and malformed on streams:
	// fail after this many answer tokens. Unset: before any byte (reset,
	// stall) or after 3 tokens (midstream, malformed).
	AfterTokens *int `json:"after_tokens,omitempty"`
	// RetryAfter is the retry-after (seconds) sent with capacity, rate_limit
	// and server_error. A rate_limit without it says 1 s; -1 sends none.
	RetryAfter float64 `json:"retry_after,omitempty"`
	// DelayMS is the gap between tokens for slow (default 250).
	DelayMS int `json:"delay_ms,omitempty"`
	// FirstDelayMS, for slow, is the wait before the first token (a slow
	// first token: the headers come at once, the output late).
	FirstDelayMS int `json:"first_delay_ms,omitempty"`
	// Error, for midstream, is the class of the error the stream ends
	// with: capacity (the default), rate_limit, server_error or timeout,
	// each in the provider's own in-stream form (Bedrock's exception
	// frames: serviceUnavailableException, throttlingException,
	// internalServerException, modelStreamErrorException).
	Error string `json:"error,omitempty"`
	// Style, for capacity: status (HTTP error) or event (in the stream).
	Style string `json:"style,omitempty"`
	// Message replaces the provider's text for the error faults
	// (bad_request: "This model does not support assistant message
	// prefill", say).
	Message string `json:"message,omitempty"`
	// Seconds, when set, makes the fault last that long (on the
	// simulator's clock) from when it was added, whatever its count: a
	// model down for a minute, then healthy again.
	Seconds float64 `json:"seconds,omitempty"`
	// ResetsIn, for usage_limit, is how long until the plan's usage window
	// resets, in seconds (default 3600): the answer says when, in each
	// provider's way.
	ResetsIn float64 `json:"resets_in,omitempty"`
	// MidLoop makes it hit only requests that bring tool results back (a
	// tool loop in progress): a model that fails in the middle of an
	// agent's turn, after its first call.
	MidLoop bool `json:"mid_loop,omitempty"`

	until time.Time // from Seconds
}

// NoRetryAfter reports a fault that must carry no retry-after at all.
func (f *Fault) NoRetryAfter() bool { return f.RetryAfter < 0 }

func (f *Fault) matches(model string, midLoop bool) bool {
	return (f.Model == "" || f.Model == "*" || f.Model == model) && (!f.MidLoop || midLoop)
}

// AddFault registers f.
func (s *Server) AddFault(f Fault) error {
	ok := false
	for _, k := range FaultKinds {
		if f.Kind == k {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("sim: unknown fault %q; allowed: %s", f.Kind, strings.Join(FaultKinds, ", "))
	}
	if f.Count == 0 {
		f.Count = 1
	}
	if f.Count < -1 {
		return fmt.Errorf("sim: fault count %d: a number of requests, or -1 until cleared", f.Count)
	}
	if f.Style != "" && f.Style != "status" && f.Style != "event" {
		return fmt.Errorf("sim: fault style %q; allowed: status, event", f.Style)
	}
	if f.Error != "" && !slices.Contains(streamErrors, f.Error) {
		return fmt.Errorf("sim: fault error %q; allowed: %s", f.Error, strings.Join(streamErrors, ", "))
	}
	if f.AfterTokens != nil && *f.AfterTokens < 0 {
		return errors.New("sim: after_tokens must be 0 or more")
	}
	if f.RetryAfter < 0 && f.RetryAfter != -1 {
		return errors.New("sim: retry_after must be seconds, or -1 for none")
	}
	if f.Seconds < 0 {
		return errors.New("sim: seconds must be 0 (no limit) or more")
	}
	if f.Seconds > 0 {
		f.until = s.clock.Now().Add(time.Duration(f.Seconds * float64(time.Second)))
	}
	if f.Model != "" && f.Model != "*" {
		if _, known := s.models[f.Model]; !known {
			return fmt.Errorf("sim: unknown model %q; the simulator serves: %s", f.Model, strings.Join(s.modelNames(), ", "))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
	return nil
}

// ClearFaults removes every fault (of one model, when model is not empty).
func (s *Server) ClearFaults(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		s.faults = nil
		return
	}
	kept := s.faults[:0]
	for _, f := range s.faults {
		if f.Model != model {
			kept = append(kept, f)
		}
	}
	s.faults = kept
}

// takeFault consumes the first fault matching model.
func (s *Server) takeFault(c *call) *Fault {
	return s.takeFaultOf(c.model.name, c.convo != nil && c.convo.midLoop())
}

// takeFaultOf consumes the first fault matching model (and a request in the
// middle of a tool loop, or not) whose kind is one of kinds (any kind when
// none is given).
func (s *Server) takeFaultOf(model string, midLoop bool, kinds ...string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	kept := s.faults[:0]
	for _, f := range s.faults { // those whose time is over go
		if f.until.IsZero() || now.Before(f.until) {
			kept = append(kept, f)
		}
	}
	s.faults = kept
	for i, f := range s.faults {
		if !f.matches(model, midLoop) || (len(kinds) > 0 && !slices.Contains(kinds, f.Kind)) {
			continue
		}
		taken := *f
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
		}
		return &taken
	}
	return nil
}

func (s *Server) modelNames() []string {
	var out []string
	for _, m := range s.sortedModels("") {
		out = append(out, m.name)
	}
	return out
}

func (s *Server) handleFaultsList(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := make([]Fault, 0, len(s.faults))
	for _, f := range s.faults {
		list = append(list, *f)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"faults": list})
}

func (s *Server) handleFaultsAdd(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	// one fault or a list of them
	var list []Fault
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		err = json.Unmarshal(body, &list)
	} else {
		var f Fault
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.DisallowUnknownFields()
		err = dec.Decode(&f)
		list = []Fault{f}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad fault JSON: " + err.Error() +
			`; send {"model":"gpt-6-astra","fault":"capacity","count":3}`})
		return
	}
	for _, f := range list {
		if err := s.AddFault(f); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
	}
	s.handleFaultsListStatus(w, http.StatusCreated)
}

func (s *Server) handleFaultsListStatus(w http.ResponseWriter, status int) {
	s.mu.Lock()
	list := make([]Fault, 0, len(s.faults))
	for _, f := range s.faults {
		list = append(list, *f)
	}
	s.mu.Unlock()
	writeJSON(w, status, map[string]any{"faults": list})
}

func (s *Server) handleFaultsClear(w http.ResponseWriter, r *http.Request) {
	s.ClearFaults(r.URL.Query().Get("model"))
	w.WriteHeader(http.StatusNoContent)
}
