package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/policy"
)

// joinFleet makes this process a member of cfg's fleet when cfg.State is
// redis://…: nil without one. The node lives until ctx ends or closeFleet
// (which also closes its connection, after the node has stopped using it).
// A Redis that does not answer now is no error: the process serves on its
// own state and joins when Redis is back.
func joinFleet(ctx context.Context, cfg *config.Config, log *slog.Logger) (node *fleet.Node, closeFleet func(), err error) {
	if !strings.HasPrefix(cfg.State, "redis") {
		return nil, nil, nil
	}
	rdb, err := fleet.Dial(cfg.State)
	if err != nil {
		return nil, nil, fail(ExitFail, "state: %v", err)
	}
	nctx, stop := context.WithCancel(ctx)
	node = fleet.NewNode(nctx, fleet.NewRedisStore(rdb), fleetID(), policy.RealClock{}, log)
	return node, func() { stop(); rdb.Close() }, nil
}

// fleetID names this process in its fleet: host and pid.
func fleetID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
