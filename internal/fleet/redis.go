package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Channel is the pub/sub channel of the fleet's evidence.
const Channel = "spillway:evidence"

// RedisStore is a Store on Redis. Times are Redis's own (its TIME inside
// each script), so the fleet never compares two machines' clocks. The
// start rate is redis_rate's GCRA; leases are a sorted set per key scored
// by expiry; the probe token is a key set with NX and a PX lease.
type RedisStore struct {
	rdb  *redis.Client
	rate *redis_rate.Limiter
}

// NewRedisStore shares state through rdb.
func NewRedisStore(rdb *redis.Client) *RedisStore {
	return &RedisStore{rdb: rdb, rate: redis_rate.NewLimiter(rdb)}
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

// lease: drop the expired, add member while fewer than the limit are
// alive (or renew it when it is already one of them).
var lease = redis.NewScript(`
redis.replicate_commands() -- TIME, then writes (needed before Redis 5)
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) and redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return 1
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

func slotsKey(key string) string { return "spillway:slots:" + key }
func probeKey(key string) string { return "spillway:probe:" + key }

// Lease implements Store.
func (r *RedisStore) Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error) {
	n, err := lease.Run(ctx, r.rdb, []string{slotsKey(key)}, member, limit, ttl.Milliseconds()).Int()
	return n == 1, err
}

// Renew implements Store.
func (r *RedisStore) Renew(ctx context.Context, key, member string, ttl time.Duration) error {
	return renew.Run(ctx, r.rdb, []string{slotsKey(key)}, member, ttl.Milliseconds()).Err()
}

// Unlease implements Store.
func (r *RedisStore) Unlease(ctx context.Context, key, member string) error {
	return r.rdb.ZRem(ctx, slotsKey(key), member).Err()
}

// Take implements Store.
func (r *RedisStore) Take(ctx context.Context, key, owner string, lease time.Duration) (bool, error) {
	err := r.rdb.SetArgs(ctx, probeKey(key), owner, redis.SetArgs{Mode: "NX", TTL: lease}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Give implements Store.
func (r *RedisStore) Give(ctx context.Context, key, owner string) error {
	return give.Run(ctx, r.rdb, []string{probeKey(key)}, owner).Err()
}
