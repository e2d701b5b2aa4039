package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/policy"
)

// The two field clients are written the way scripts in the wild are, on
// purpose without spillway's classifier or policy engine: what they get
// wrong is what the bench measures.

// naiveAttempts is how often the naive client tries a task: at once, again
// and again, on the same model.
const naiveAttempts = 8

// fieldAttempts is the common recipe's cap.
const fieldAttempts = 6

// reply is one Chat Completions call's result.
type reply struct {
	status int
	model  string // who wrote the answer
	err    error
	why    string // a failure, in short
}

func (r reply) ok() bool { return r.err == nil && r.status == http.StatusOK && r.model != "" }

// post sends body to url and reads the answer's author.
func (w *world) post(ctx context.Context, url string, body []byte, header map[string]string) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchKey)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return reply{err: err, why: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, err: err}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		r.why = fmt.Sprintf("HTTP %d %s", resp.StatusCode, e.Error.Message)
	}
	if err == nil && resp.StatusCode == http.StatusOK {
		var ans struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(b, &ans) == nil && len(ans.Choices) > 0 {
			r.model = answeredBy(ans.Choices[0].Message.Content)
		}
	}
	return r
}

// sleep waits d or until ctx ends, and says whether it waited it out.
func sleep(ctx context.Context, d time.Duration) bool {
	return policy.RealClock{}.Sleep(ctx, d) == nil
}

// runNaive is what people do by hand: ask the model they want, and on any
// error ask again at once, up to a cap.
func runNaive(ctx context.Context, w *world, tasks []Task) ([]outcome, error) {
	url := w.simURL + "/v1/chat/completions"
	return each(ctx, w, tasks, func(ctx context.Context, t Task) (string, string, bool) {
		var r reply
		for range naiveAttempts {
			if r = w.post(ctx, url, t.chatBody(w.chain[0]), nil); r.ok() {
				return r.model, "", true
			}
			if ctx.Err() != nil {
				break
			}
		}
		return "", r.why, false
	}), nil
}

// runField is a faithful port of the common recipe: models in priority
// order, the next one on a capacity error (503/529), a sleep of 2^attempt
// plus a random second after every failure, six attempts; tasks started a
// jittered 0.5–2 s apart, a few at a time. It knows nothing of tiers.
func runField(ctx context.Context, w *world, tasks []Task) ([]outcome, error) {
	url := w.simURL + "/v1/chat/completions"
	var mu sync.Mutex
	var next time.Time
	rng := rand.New(rand.NewPCG(1, 2))
	pace := func(ctx context.Context) bool {
		mu.Lock()
		start := time.Now()
		if next.After(start) {
			start = next
		}
		next = start.Add(w.real(500*time.Millisecond + time.Duration(rng.Float64()*1.5*float64(time.Second))))
		mu.Unlock()
		return sleep(ctx, time.Until(start))
	}
	return each(ctx, w, tasks, func(ctx context.Context, t Task) (string, string, bool) {
		if !pace(ctx) {
			return "", "", false
		}
		m := 0
		var r reply
		for attempt := range fieldAttempts {
			r = w.post(ctx, url, t.chatBody(w.chain[m]), nil)
			switch {
			case r.ok():
				return r.model, "", true
			case r.status == http.StatusServiceUnavailable || r.status == 529:
				m = (m + 1) % len(w.chain)
			case r.status >= 400 && r.status < 500 && r.status != http.StatusTooManyRequests:
				return "", r.why, false // the request itself is wrong: retrying will not help
			}
			if attempt == fieldAttempts-1 {
				break
			}
			mu.Lock()
			jitter := rng.Float64()
			mu.Unlock()
			if !sleep(ctx, w.real(time.Duration((math.Pow(2, float64(attempt))+jitter)*float64(time.Second)))) {
				break
			}
		}
		return "", r.why, false
	}), nil
}

// gatewayBudget is the wait budget (simulated time) the gateway client
// sends: a batch that would rather wait for its tier than fail, through a
// whole afternoon's peak if need be.
const gatewayBudget = 3 * time.Hour

// runGateway sends each task once through spillway's gateway, with the
// task's minimum tier and a long wait budget (X-Spillway-Budget).
func runGateway(ctx context.Context, w *world, tasks []Task) ([]outcome, error) {
	sink, closeLog, err := w.eventLog(SpillwayGateway)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	gw, err := gateway.New(gateway.Options{Config: w.cfg, Events: sink})
	if err != nil {
		return nil, err
	}
	addr, err := serve.Background(ctx, gw.Handler(), serve.Options{})
	if err != nil {
		return nil, err
	}
	budget := w.real(gatewayBudget)
	url := "http://" + addr + "/v1/chat/completions"
	return each(ctx, w, tasks, func(ctx context.Context, t Task) (string, string, bool) {
		r := w.post(ctx, url, t.chatBody(w.chain[0]), map[string]string{
			"X-Spillway-Min-Tier": string(t.MinTier),
			"X-Spillway-Budget":   budget.String(),
		})
		return r.model, r.why, r.ok()
	}), nil
}

// eventLog is the client's event log in w.events (nil, with nothing to
// close, when there is none).
func (w *world) eventLog(client string) (events.Sink, func(), error) {
	if w.events == "" {
		return nil, func() {}, nil
	}
	wr, err := events.NewWriter(filepath.Join(w.events, client+".jsonl"), 0, 0)
	if err != nil {
		return nil, nil, err
	}
	return wr, func() { _ = wr.Close(context.Background()) }, nil
}

// runQueue adds the batch to a spillway queue (SQLite, as a user's first
// queue is) and works it until it is empty.
func runQueue(ctx context.Context, w *world, tasks []Task) ([]outcome, error) {
	dir := w.dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "spillway-bench-queue-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	db := filepath.Join(dir, "bench-queue-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".db")
	store, err := queue.Open(ctx, "sqlite:"+db, dir, queue.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i], err = store.Add(ctx, queue.Task{Name: t.Name, Chain: "codex", MinTier: string(t.MinTier),
			Steps: []queue.Step{{Name: "ask", Prompt: t.Prompt, System: t.Context, Model: w.chain[0]}}}, time.Now())
		if err != nil {
			return nil, err
		}
	}
	var ladder []time.Duration
	for _, d := range w.cfg.Retry.Ladder {
		ladder = append(ladder, d.D())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var rmu sync.Mutex
	engine := policy.New(queue.Paced(w.cfg), policy.ForBatchWork(), policy.WithRand(func() float64 { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() }))
	sink, closeLog, err := w.eventLog(SpillwayQueue)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	// (a rung's checks come once a simulated minute, as the queue's
	// once a minute in real time: every wait divided by the clock's)
	runErr := workQueue(ctx, store, queue.RunOptions{Config: w.cfg, Engine: engine, Concurrency: w.conc, Ladder: ladder, CheckEvery: w.real(time.Minute), UntilEmpty: true, Events: sink})
	// read the results even when the run was cut short
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	outs, err := queueOutcomes(rctx, store, ids, w.t0)
	if err != nil {
		return outs, err
	}
	return outs, runErr
}

// workQueue runs the queue --until-empty, which stops when what is left
// waits (for capacity, say): as a script would, it runs the queue again
// when the next task is due, until none is.
func workQueue(ctx context.Context, store *queue.Store, ro queue.RunOptions) error {
	for {
		if err := store.Run(ctx, ro); err != nil || ctx.Err() != nil {
			return err
		}
		list, err := store.List(ctx)
		if err != nil {
			return err
		}
		next, _ := queue.NextDue(list)
		if next.IsZero() {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
}

// queueOutcomes reads the outcome of each task (by id) from store; t0 is
// when the batch started.
func queueOutcomes(ctx context.Context, store *queue.Store, ids []int64, t0 time.Time) ([]outcome, error) {
	outs := make([]outcome, len(ids))
	for i, id := range ids {
		in, err := store.Get(ctx, id)
		if err != nil {
			return outs, err
		}
		if in.Status != "succeeded" {
			outs[i].why = "task " + in.Status
			if n := len(in.Errors); n > 0 {
				outs[i].why += ": " + in.Errors[n-1]
			}
			continue
		}
		out, ok, err := store.Result(ctx, id)
		if err != nil || !ok {
			return outs, fmt.Errorf("task %d succeeded without a result: %v", id, err)
		}
		outs[i] = outcome{done: true, model: answeredBy(out), at: in.FinishedAt.Sub(t0)}
	}
	return outs, nil
}
