package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/spillway/spillway/config"
)

// Task is one unit of the batch every client of the resilience bench gets.
type Task struct {
	ID      int
	Name    string
	Prompt  string
	MinTier config.Tier
	// Context is the large-context part of a fat task (a system message),
	// empty for a small one.
	Context string
}

// fatContext is about 20 000 tokens: three pool slots on the simulator
// (one, plus one per 8 000 tokens), the first requests a full pool refuses.
const fatContext = 80_000

// Tasks is the deterministic batch for seed: a fifth need the heavy tier
// (refactors, architecture), three tenths at least medium, the rest are
// light work, half of which carries a large context. Only light work is fat:
// at a weekday peak a fat request never fits a heavy or medium pool, so a
// fat heavy task could not finish before the evening, by any client.
func Tasks(n int, seed int64) []Task {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xbe7c))
	tiers := make([]config.Tier, n)
	for i := range tiers {
		switch {
		case i < n/5:
			tiers[i] = config.Heavy
		case i < n/5+n*3/10:
			tiers[i] = config.Medium
		default:
			tiers[i] = config.Light
		}
	}
	rng.Shuffle(n, func(i, j int) { tiers[i], tiers[j] = tiers[j], tiers[i] })
	verbs := []string{"refactor", "document", "review", "test", "summarise", "rename", "split", "explain"}
	things := []string{"the parser", "the billing module", "the retry loop", "the CLI flags", "the cache", "the migration", "the README", "the HTTP handler"}
	out := make([]Task, n)
	for i := range out {
		t := Task{ID: i, Name: fmt.Sprintf("task-%03d", i), MinTier: tiers[i]}
		t.Prompt = fmt.Sprintf("bench %s: %s %s", t.Name, verbs[rng.IntN(len(verbs))], things[rng.IntN(len(things))])
		if t.MinTier == config.Light && rng.IntN(2) == 0 {
			t.Context = strings.Repeat("context ", fatContext/8)
		}
		out[i] = t
	}
	return out
}

// chatBody is the task as an OpenAI Chat Completions request to model, the
// same bytes for every client but the model name (the queue builds the same
// message list itself).
func (t Task) chatBody(model string) []byte {
	msgs := []map[string]string{}
	if t.Context != "" {
		msgs = append(msgs, map[string]string{"role": "system", "content": t.Context})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": t.Prompt})
	b, _ := json.Marshal(map[string]any{"model": model, "messages": msgs})
	return b
}

// answeredBy reads the model that wrote an answer: the simulator starts
// every answer with "[model]".
func answeredBy(text string) string {
	if !strings.HasPrefix(text, "[") {
		return ""
	}
	if i := strings.IndexByte(text, ']'); i > 0 {
		return text[1:i]
	}
	return ""
}
