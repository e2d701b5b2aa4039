package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Channel is the pub/sub channel of the fleet's evidence.
const Channel = "spillway:evidence"

// RedisStore is a Store on Redis. Times are Redis's own (its TIME inside
// each script), so the fleet never compares two machines' clocks. The
// start rate is redis_rate's GCRA; leases are a sorted set per key scored
// by expiry; the probe token is a key set only when free, with a lease.
//
// A Redis that stalls (paused, swapped out) still reads what was sent to
// it meanwhile, and carries it out when it wakes, long after the caller
// gave up: a lease or a token taken then would be held by nobody. So a
// lease or a token asked for under a deadline (the ctx's) carries that
// deadline in Redis's own time, and the script refuses it (ErrLate) when
// it runs later than that.
type RedisStore struct {
	rdb     *redis.Client
	rate    *redis_rate.Limiter
	clock   storeClock
	markTTL time.Duration
}

// markTTL is how long a process's liveness mark stands unless renewed
// (every markTTL/3): a lease of a process whose mark is gone is dropped by
// the next lease that finds its lane full.
const markTTL = 3 * time.Second

// ErrLate is a store's answer to an ask it carried out after the ask's
// deadline: nothing was taken (the caller had given up on it).
var ErrLate = errors.New("the shared store ran the ask after its deadline (it stalled): nothing taken")

// storeClock maps this process's time onto the Redis server's, from the
// server's times that answers tell. An answer comes after the time it
// tells, so each tells an offset a little behind the server: the largest
// heard lately (within sampleLife, so that the two clocks' drift stays
// negligible) is the best, and a deadline mapped with it falls a little
// early on the server's clock, never late. Deadlines come from a ctx, on
// the machine's clock; so does this (monotonic readings).
type storeClock struct {
	mu     sync.Mutex
	origin time.Time // the first answer's arrival here: offsets are counted from it
	offset int64     // the server's time less the time since origin, ms
	at     time.Time // when offset was heard
}

// sampleLife is how long the best offset heard stands against later ones
// that tell less.
const sampleLife = 10 * time.Second

// deadline is ctx's deadline on the server's clock, in ms: 0 when ctx has
// none, or while the server's time is not yet known (no limit: the ask
// takes no extra round trip for it, which on a slow store would spend the
// call's whole timeout; an ask given up on is a stray the node hands back,
// and its answer tells the server's time for the next). Ping tells it too.
func (r *RedisStore) deadline(ctx context.Context) (int64, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	r.clock.mu.Lock()
	known := !r.clock.origin.IsZero()
	r.clock.mu.Unlock()
	if !known {
		return 0, nil
	}
	r.clock.mu.Lock()
	defer r.clock.mu.Unlock()
	return r.clock.offset + dl.Sub(r.clock.origin).Milliseconds(), nil
}

// heard takes the server's time ms, told by an answer that just came.
func (r *RedisStore) heard(ms int64) {
	now := time.Now() // the machine's clock, as ctx deadlines are
	r.clock.mu.Lock()
	defer r.clock.mu.Unlock()
	c := &r.clock
	if c.origin.IsZero() {
		c.origin = now
	}
	offset := ms - now.Sub(c.origin).Milliseconds()
	if c.at.IsZero() || offset >= c.offset || now.Sub(c.at) > sampleLife {
		c.offset, c.at = offset, now
	}
}

// granted reads a script's answer {1 granted | 0 refused | -1 late, the
// server's time}.
func (r *RedisStore) granted(res any, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	v, ok := res.([]any)
	if !ok || len(v) != 2 {
		return false, fmt.Errorf("the shared store answered %v to a lease", res)
	}
	code, _ := v[0].(int64)
	if ms, ok := v[1].(int64); ok {
		r.heard(ms)
	}
	switch code {
	case 1:
		return true, nil
	case -1:
		return false, ErrLate
	}
	return false, nil
}

// NewRedisStore shares state through rdb.
func NewRedisStore(rdb *redis.Client) *RedisStore {
	return &RedisStore{rdb: rdb, rate: redis_rate.NewLimiter(rdb), markTTL: markTTL}
}

// Ping asks the server its time and loads the scripts: it answers (a
// check at start), the time it tells maps the first asks' deadlines onto
// its clock, and the first asks are one call each (a script the server
// does not hold yet costs a second: EVALSHA, then EVAL).
func (r *RedisStore) Ping(ctx context.Context) error {
	t, err := r.rdb.Time(ctx).Result()
	if err != nil {
		return err
	}
	r.heard(t.UnixMilli())
	for _, s := range []*redis.Script{lease, mark, take, renew, give} {
		if err := s.Load(ctx, r.rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// WithMarkTTL sets how long a liveness mark stands (tests: a short one).
func (r *RedisStore) WithMarkTTL(d time.Duration) *RedisStore {
	r.markTTL = d
	return r
}

// Dial connects to a redis:// or rediss:// URL with timeouts short enough
// for the request path: a Redis that does not answer within 50 ms is
// treated as down, and the process goes on with its own state.
func Dial(url string) (*redis.Client, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 200*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	o.MaxRetries = -1 // a retry would double the wait on the request path
	return redis.NewClient(o), nil
}

// Publish implements Store.
func (r *RedisStore) Publish(ctx context.Context, msg []byte) error {
	return r.rdb.Publish(ctx, Channel, msg).Err()
}

// Subscribe implements Store: go-redis resubscribes after a broken
// connection by itself.
func (r *RedisStore) Subscribe(ctx context.Context) (<-chan []byte, <-chan struct{}) {
	out := make(chan []byte, 1024)
	ready := make(chan struct{})
	go func() {
		sub := r.rdb.Subscribe(ctx, Channel)
		defer sub.Close()
		for ctx.Err() == nil { // the first confirmation (retried until Redis answers)
			if _, err := sub.Receive(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		close(ready)
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- []byte(m.Payload):
				default: // the node does not keep up: drop, as Redis would a slow subscriber
				}
			}
		}
	}()
	return out, ready
}

// Turn implements Store with redis_rate (a GCRA): a burst of one at one
// start per gap.
func (r *RedisStore) Turn(ctx context.Context, key string, gap time.Duration) (time.Duration, error) {
	if gap <= 0 {
		return 0, nil
	}
	res, err := r.rate.Allow(ctx, "spillway:pace:"+key, redis_rate.Limit{Rate: 1, Burst: 1, Period: gap})
	if err != nil {
		return 0, err
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}

// onTime is a script's opening: now, Redis's time in ms, and the refusal
// ({-1, now}) of an ask run after its deadline, the argument arg (ms; 0:
// none). TIME comes before the writes, which needs replicate_commands
// before Redis 5.
func onTime(arg string) string {
	return `redis.replicate_commands()
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local deadline = tonumber(` + arg + `)
if deadline > 0 and now > deadline then
  return {-1, now}
end
`
}

// lease: refuse when run after the deadline ARGV[4] (ms, 0: none); drop
// the expired, add member while fewer than the limit are alive (or renew
// it when it is already one of them). It answers {1 | 0 | -1 late, now}.
//
// Liveness (ARGV[5], the mark's TTL in ms; 0: off): a member names its
// process ("<process>/<ms>/<random>"); when the lane is full, a member
// whose process has no mark (spillway:node:<process>, see mark) is dropped,
// not waited out, but only while the marks are trustworthy: every process
// has been renewing for a whole mark TTL (KEYS[2]'s since) and the last
// renewal is recent (its last). After Redis was paused, or unreachable for
// everyone, every mark has lapsed at once although their processes live:
// then nothing is dropped (the TTL rule alone) until each live process had
// a mark TTL's worth of renewals to mark itself again. A member of an
// older spillway ("<process>/<random>") has no process to look up: the TTL
// rule alone. A grant marks the asker (it renews its mark before its new
// lease can be judged by it). The mark keys are named in the script, not
// in KEYS: a single Redis, not a cluster.
var lease = redis.NewScript(onTime("ARGV[4]") + `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local function process(m) return string.match(m, "^(.+)/%d+/%x+$") end
local markTTL = tonumber(ARGV[5])
local full = function()
  return not redis.call("ZSCORE", KEYS[1], ARGV[1]) and redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[2])
end
if markTTL > 0 and full() then
  local beat = redis.call("HMGET", KEYS[2], "since", "last")
  local since, last = tonumber(beat[1] or "0") or 0, tonumber(beat[2] or "0") or 0
  if since > 0 and now - since >= markTTL and now - last <= markTTL then
    for _, m in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
      local p = process(m)
      if p and redis.call("EXISTS", "spillway:node:" .. p) == 0 then
        redis.call("ZREM", KEYS[1], m)
      end
    end
  end
end
if full() then
  return {0, now}
end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[3])
local p = process(ARGV[1])
if markTTL > 0 and p then
  redis.call("SET", "spillway:node:" .. p, "1", "PX", markTTL)
end
return {1, now}
`)

// mark: refuse when run after the deadline ARGV[2] (ms, 0: none); mark
// the process KEYS[1] live for ARGV[1] ms, and keep KEYS[2]'s account of
// the fleet's renewals: since when they have flowed without a gap longer
// than a mark's TTL (since), and the latest (last).
var mark = redis.NewScript(onTime("ARGV[2]") + `
local ttl = tonumber(ARGV[1])
local last = tonumber(redis.call("HGET", KEYS[2], "last") or "0") or 0
if now - last > ttl then
  redis.call("HSET", KEYS[2], "since", now)
end
redis.call("HSET", KEYS[2], "last", now)
redis.call("PEXPIRE", KEYS[2], ttl * 10)
redis.call("SET", KEYS[1], "1", "PX", ttl)
return {1, now}
`)

// take: refuse when run after the deadline ARGV[3] (ms, 0: none); make
// ARGV[1] the token's holder for ARGV[2] ms unless someone holds it.
var take = redis.NewScript(onTime("ARGV[3]") + `
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {1, now}
end
return {0, now}
`)

// renew: push member's expiry on, when it is still held.
var renew = redis.NewScript(`
redis.replicate_commands()
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 1
`)

// give: delete the token only when owner holds it.
var give = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
`)

func slotsKey(key string) string    { return "spillway:slots:" + key }
func probeKey(key string) string    { return "spillway:probe:" + key }
func markKey(process string) string { return "spillway:node:" + process }

// nodesKey is the fleet's account of its liveness marks' renewals.
const nodesKey = "spillway:nodes"

// Lease implements Store: ErrLate when Redis ran it after ctx's deadline.
func (r *RedisStore) Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error) {
	dl, err := r.deadline(ctx)
	if err != nil {
		return false, err
	}
	return r.granted(lease.Run(ctx, r.rdb, []string{slotsKey(key), nodesKey}, member, limit, ttl.Milliseconds(), dl, r.markTTL.Milliseconds()).Result())
}

// MarkTTL is how long a liveness mark stands unless renewed.
func (r *RedisStore) MarkTTL() time.Duration { return r.markTTL }

// Mark marks process live for MarkTTL: ErrLate when Redis ran it after
// ctx's deadline (a renewal sent while it was paused marks nothing).
func (r *RedisStore) Mark(ctx context.Context, process string) error {
	dl, err := r.deadline(ctx)
	if err != nil {
		return err
	}
	_, err = r.granted(mark.Run(ctx, r.rdb, []string{markKey(process), nodesKey}, r.markTTL.Milliseconds(), dl).Result())
	return err
}

// Unmark ends process's mark (a clean shutdown): its leases left behind
// are dropped by the next lease that finds their lane full.
func (r *RedisStore) Unmark(ctx context.Context, process string) error {
	return r.rdb.Del(ctx, markKey(process)).Err()
}

// Renew implements Store.
func (r *RedisStore) Renew(ctx context.Context, key, member string, ttl time.Duration) error {
	return renew.Run(ctx, r.rdb, []string{slotsKey(key)}, member, ttl.Milliseconds()).Err()
}

// Unlease implements Store.
func (r *RedisStore) Unlease(ctx context.Context, key, member string) error {
	return r.rdb.ZRem(ctx, slotsKey(key), member).Err()
}

// Take implements Store: ErrLate when Redis ran it after ctx's deadline.
func (r *RedisStore) Take(ctx context.Context, key, owner string, lease time.Duration) (bool, error) {
	dl, err := r.deadline(ctx)
	if err != nil {
		return false, err
	}
	return r.granted(take.Run(ctx, r.rdb, []string{probeKey(key)}, owner, max(lease.Milliseconds(), 1), dl).Result())
}

// Give implements Store.
func (r *RedisStore) Give(ctx context.Context, key, owner string) error {
	return give.Run(ctx, r.rdb, []string{probeKey(key)}, owner).Err()
}
