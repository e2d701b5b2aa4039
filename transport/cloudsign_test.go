package transport_test

import (
	"net/http"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/transport"
)

// The library's transport signs for clouds, as built for a library caller,
// for the queue (its engine and events) and over a caller's own base: a
// request marked for a cloud never leaves it unsigned.
func TestTransportSignsForClouds(t *testing.T) {
	cfg := config.Default()
	for name, tr := range map[string]*transport.Transport{
		"library":  transport.New(cfg),
		"queue":    transport.New(cfg, transport.WithEngine(policy.New(cfg)), transport.WithEvents(events.Nop{})),
		"own base": transport.New(cfg, transport.WithBase(http.DefaultTransport)),
	} {
		if !tr.AuthorizesClouds() {
			t.Errorf("%s: the transport does not sign for clouds", name)
		}
	}
}
