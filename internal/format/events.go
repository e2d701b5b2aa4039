package format

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Usage is an answer's token counts, as far as the target said them.
type Usage struct {
	Input, Output, Cached, CacheWrite, Reasoning int
}

// Stops, in no vendor's words.
const (
	StopEnd    = "end"
	StopLength = "length"
	StopTool   = "tool"
	StopFilter = "filter"
	StopSeq    = "stop_sequence"
)

// Event is one step of an answer in no vendor's format.
type Event struct {
	Kind   EventKind
	Text   string
	Call   int // the call's number in the answer, from 0
	ID     string
	Name   string // the target's tool name
	Stop   string
	Usage  Usage
	Status int    // an error's HTTP-like status
	EType  string // an error's type, in the target's words
}

type EventKind int

const (
	EvStart EventKind = iota // the answer's id is known (usage too, for Messages)
	EvText
	EvCallStart
	EvCallArgs
	EvUsage
	EvFinish // the stop reason (more usage may follow)
	EvEnd    // the answer is over
	EvError  // an error in the stream
)

// ToolCall is one tool ToolCall of the answer.
type ToolCall struct {
	ID, Name string // the client's id and the target's name
	Args     strings.Builder
	Tool     Tool
	Done     bool
}

// NewID is an id for something spillway makes (an answer's, a call's).
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
