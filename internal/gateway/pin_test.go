package gateway

import (
	"net/http/httptest"
	"testing"

	"github.com/spillway/spillway/config"
)

// A request keeps the configuration it started with through a reload: its
// retries are never built from the new one (keys, providers, chains).
func TestPinKeepsARequestsConfiguration(t *testing.T) {
	old := config.Default()
	s, err := New(Options{Config: old})
	if err != nil {
		t.Fatal(err)
	}
	r := s.pin(httptest.NewRequest("POST", "/v1/chat/completions", nil))
	next := config.Default()
	s.Reload(next)
	if s.stateOf(r.Context()).cfg != old || s.conf() != next {
		t.Fatal("a pinned request follows the reload")
	}
	if again := s.pin(r); s.stateOf(again.Context()).cfg != old {
		t.Fatal("pinning again moved the request to the new configuration")
	}
}
