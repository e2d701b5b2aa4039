package agent

import (
	"context"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
)

// A long rung's check of a model on a cloud goes through a transport that
// signs for clouds (send.Room refuses a cloud request through one that
// does not): the simulator's Bedrock answers it, and it finds room.
func TestRoomCheckSignsForClouds(t *testing.T) {
	_, url := simtest.Start(t, nil)
	cfg := simtest.Config(url)
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: url, Auth: config.AuthKey,
		APIKey: config.Secret{Value: "ABSK-agent-test"}}
	x := newExecution(Options{Command: []string{"claude"}, Config: cfg, Engine: policy.New(cfg)})
	if s, ok := x.rt.(interface{ AuthorizesClouds() bool }); !ok || !s.AuthorizesClouds() {
		t.Fatalf("the checks' transport %T does not sign for clouds", x.rt)
	}
	cand := policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "us.anthropic.claude-sonnet-5-5-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock}
	if room, checked := x.check(context.Background(), cand); !room || !checked {
		t.Fatalf("the check of a model on Bedrock: room %v, checked %v; want both", room, checked)
	}
}
