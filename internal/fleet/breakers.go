// Package fleet shares what one spillway process learns about capacity
// with the others of a fleet, through Redis (state: redis://…).
//
// Breakers: each process decides with its own in-memory breakers (the
// request path never waits on Redis); every capacity answer or timeout an
// attempt of this process meets is published, and every one another
// process publishes is fed into the local breakers as if seen here. So a
// model that fills up through gateway A trips gateway B's breaker within
// the pub/sub delivery time (milliseconds), and B skips it without trying.
// When Redis is slow or down, publishing is dropped (never queued without
// bound) and each process goes on with its own evidence; the degradation is
// logged once and shows in Degraded; go-redis reconnects and resubscribes
// by itself, and sharing resumes.
//
// Written here rather than with a distributed-breaker library: none of the
// maintained ones keeps the decision local with shared evidence, which the
// request path needs (no Redis round trip when nothing changes).
package fleet

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/policy"
)

// Channel is the pub/sub channel of breaker evidence.
const Channel = "spillway:breakers"

// callTimeout bounds one Redis call on the way out of an attempt.
const callTimeout = 50 * time.Millisecond

// evidence is one verdict about one breaker key, as published.
type evidence struct {
	From  string `json:"from"` // the process that saw it
	Key   string `json:"key"`
	Class string `json:"class"`
}

// Breakers are local breakers fed with the fleet's evidence.
type Breakers struct {
	local    *policy.MemoryBreakers
	rdb      *redis.Client
	id       string
	out      chan evidence
	log      *slog.Logger
	degraded atomic.Bool
	seen     atomic.Int64 // evidence received from others
}

// NewBreakers shares local's evidence through rdb under process id (unique
// per process) until ctx ends.
func NewBreakers(ctx context.Context, local *policy.MemoryBreakers, rdb *redis.Client, id string, log *slog.Logger) *Breakers {
	b := &Breakers{local: local, rdb: rdb, id: id, out: make(chan evidence, 1024), log: log}
	go b.publish(ctx)
	go b.subscribe(ctx)
	return b
}

// shared reports whether a verdict is evidence worth sharing: what opens a
// breaker (capacity, a silent model).
func shared(v classify.Verdict) bool {
	return v.Class == classify.Capacity || v.Class == classify.Timeout
}

func (b *Breakers) send(key string, v classify.Verdict) {
	if !shared(v) {
		return
	}
	select {
	case b.out <- evidence{From: b.id, Key: key, Class: string(v.Class)}:
	default: // Redis cannot keep up: this process keeps its own evidence
	}
}

func (b *Breakers) publish(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.out:
			msg, _ := json.Marshal(e)
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := b.rdb.Publish(cctx, Channel, msg).Err()
			cancel()
			b.health(err)
		}
	}
}

// health logs a change between sharing and not, once each way.
func (b *Breakers) health(err error) {
	switch {
	case err != nil && !b.degraded.Swap(true):
		b.log.Warn("fleet: Redis unreachable; breakers go on with this process's own evidence until it is back", "error", err.Error())
	case err == nil && b.degraded.Swap(false):
		b.log.Info("fleet: Redis is back; breaker evidence is shared again")
	}
}

func (b *Breakers) subscribe(ctx context.Context) {
	sub := b.rdb.Subscribe(ctx, Channel)
	defer sub.Close()
	ch := sub.Channel() // reconnects and resubscribes by itself
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			var e evidence
			if json.Unmarshal([]byte(m.Payload), &e) != nil || e.From == b.id || e.Key == "" {
				continue
			}
			b.seen.Add(1)
			b.local.Observe(e.Key, classify.Verdict{Class: classify.Class(e.Class)})
		}
	}
}

// Allow is the local breakers', with this process's evidence published.
func (b *Breakers) Allow(key string) (func(classify.Verdict), bool) {
	done, ok := b.local.Allow(key)
	if !ok {
		return nil, false
	}
	return func(v classify.Verdict) {
		done(v)
		b.send(key, v)
	}, true
}

// Observe records late evidence here and shares it.
func (b *Breakers) Observe(key string, v classify.Verdict) {
	b.local.Observe(key, v)
	b.send(key, v)
}

// Open is the local breakers'.
func (b *Breakers) Open(key string) bool { return b.local.Open(key) }

// States is the local breakers'.
func (b *Breakers) States() map[string]string { return b.local.States() }

// Wait is the local breakers'.
func (b *Breakers) Wait(key string) time.Duration { return b.local.Wait(key) }

// OnChange subscribes to the local breakers' changes (the gateway's metrics
// and log), remote evidence included.
func (b *Breakers) OnChange(f func(key, from, to string)) { b.local.OnChange(f) }

// Degraded reports whether Redis was unreachable at the last try.
func (b *Breakers) Degraded() bool { return b.degraded.Load() }

// Received is how much evidence came from other processes.
func (b *Breakers) Received() int64 { return b.seen.Load() }
