package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/policy"
)

// joinFleet makes this process a member of cfg's fleet when cfg.State is
// redis://…: nil without one. The node lives until ctx ends or closeFleet
// (which deletes its liveness mark, so that the fleet drops what it leaves
// behind at once, then closes its connection, after the node has stopped
// using it).
// A Redis that does not answer now is no error: the process serves on its
// own state and joins when Redis is back.
func joinFleet(ctx context.Context, cfg *config.Config, log *slog.Logger) (node *fleet.Node, closeFleet func(), err error) {
	if !strings.HasPrefix(cfg.State, "redis") {
		return nil, nil, nil
	}
	// go-redis's own lines (a dial that failed, a pool's troubles) go
	// through the command's logger, in its format: with --log-format json
	// every line is one JSON object (the library has one logger for the
	// process, so it is set here, where the process's logger is known)
	redis.SetLogger(redisLog{log})
	rdb, err := fleet.Dial(cfg.State)
	if err != nil {
		return nil, nil, fail(ExitFail, "state: %v", err)
	}
	nctx, stop := context.WithCancel(ctx)
	store := fleet.NewRedisStore(rdb)
	node = fleet.NewNode(nctx, store, fleetID(), policy.RealClock{}, log)
	// the store checked now: an unreachable one is said at the start (and
	// shown as degraded), not at the first capacity answer
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	node.Report(store.Ping(pctx))
	cancel()
	return node, func() {
		node.Close(context.WithoutCancel(ctx)) // ctx may have ended (a signal): the mark is deleted all the same
		stop()
		rdb.Close()
	}, nil
}

// redisLog is go-redis's logger on slog.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis", "said", redact.String(strings.TrimSpace(fmt.Sprintf(format, v...))))
}

// fleetID names this process in its fleet: host and pid.
func fleetID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
