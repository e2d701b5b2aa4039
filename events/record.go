// Package events is spillway's attempt log: one JSON object per line, one
// line per upstream attempt, written by the gateway, the agent wrapper, the
// queue and the library; it is the record of what happened to every request
// (docs/ARCHITECTURE.md says who writes what). The one other kind of line
// is a gap line (Record.Gap): the records a Writer lost, said when it
// writes again.
//
// The field names are a contract (docs/gateway.md, "The event log"): add fields,
// never rename them.
package events

import "time"

// Sources of records.
const (
	SourceGateway = "gateway"
	SourceExec    = "exec"
	SourceQueue   = "queue"
	SourceLibrary = "library"
)

// Record is one upstream attempt.
type Record struct {
	TS        time.Time `json:"ts"` // RFC 3339, UTC
	RequestID string    `json:"request_id"`
	Attempt   int       `json:"attempt"` // 1-based within the request
	Source    string    `json:"source"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	// Deployment names the model's deployment the attempt went to, when the
	// model has several (added after the first fields: absent otherwise).
	Deployment     string `json:"deployment,omitempty"`
	RequestedModel string `json:"requested_model"`
	Endpoint       string `json:"endpoint"`
	Status         int    `json:"status"`
	Class          string `json:"class"`
	LatencyMS      int64  `json:"latency_ms"`
	TTFBMS         int64  `json:"ttfb_ms"`
	ReqBytes       int64  `json:"req_bytes"`
	EstInputTokens int    `json:"est_input_tokens"`
	OutputTokens   int    `json:"output_tokens"`
	Stream         bool   `json:"stream"`
	FallbackFrom   string `json:"fallback_from"`
	WaitMS         int64  `json:"wait_ms"` // waited before this attempt
	Error          string `json:"error"`   // redacted
	// Route, on the record of an attempt whose answer reached the caller,
	// is the request's route through it, as X-Spillway-Route says it at
	// the end ("gpt-6-astra:capacity > gpt-6.1-sol:ok"; added after the
	// first fields: absent on other attempts).
	Route string `json:"route,omitempty"`
	// CallerEnded marks an attempt the caller's own context ended (its
	// cancel or its deadline), not the model, a watchdog or the network:
	// its class says what was cut, and nothing of the model's health
	// (added after the first fields: absent otherwise).
	CallerEnded bool `json:"caller_ended,omitempty"`
	// HedgeLost marks the attempt that lost a hedge's race: another
	// attempt of the request answered first (added after the first
	// fields: absent otherwise).
	HedgeLost bool `json:"hedge_lost,omitempty"`
	// TranslatedFrom marks an attempt sent to another vendor's model: the
	// client's own kind of request (responses, chat, messages,
	// generateContent, streamGenerateContent), translated into the
	// model's format (added after the first fields: absent otherwise).
	TranslatedFrom string `json:"translated_from,omitempty"`
	// Gap is set on the one line of the log that is not an attempt: when
	// a Writer writes again after it lost records (a full disk, a write
	// or open that failed, a queue the disk could not keep up with), one
	// line {"gap":{…}} says how many and between which times, and nothing
	// else: it has no "ts", so that a reader that knows only attempts
	// skips it as a record without a time. Only a Writer sets it; a Sink
	// ignores it on the records it is given (added after the first
	// fields).
	Gap *Gap `json:"gap,omitempty"`
}

// Gap is records that never reached the log, as its gap line says them.
type Gap struct {
	// Lost is how many records were lost.
	Lost uint64 `json:"lost"`
	// From and Until are the ts of the first and the last of them
	// (absent when unknown: a record refused for its timestamp; and a
	// record the queue refused while the writer said the gap before may
	// have its ts in that gap).
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Error is what lost the last of them: the failed write or open
	// ("write /home/u/.local/state/spillway/events.jsonl: no space left on
	// device"), or that the queue of records waiting for the disk was full.
	Error string `json:"error"`
}
