package gemini

import "github.com/spillway/spillway/internal/format"

func geminiChunk(s *format.Stream, parts []any, finish string, usage bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": s.Turn().Model, "responseId": s.ID}
	if usage {
		out["usageMetadata"] = geminiUsage(s.Usage)
	}
	return out
}

func geminiCall(c *format.ToolCall) map[string]any {
	return map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Tool.Name, "args": format.ArgsObject(format.CallArgs(c))}}
}

func geminiStopOf(stop string) string {
	switch stop {
	case format.StopLength:
		return "MAX_TOKENS"
	case format.StopFilter:
		return "SAFETY"
	}
	return "STOP"
}

func geminiUsage(u format.Usage) map[string]any {
	m := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": max(u.Output-u.Reasoning, 0), "totalTokenCount": u.Input + u.Output}
	if u.Cached > 0 {
		m["cachedContentTokenCount"] = u.Cached
	}
	if u.Reasoning > 0 {
		m["thoughtsTokenCount"] = u.Reasoning
	}
	return m
}

// writer writes neutral events as a Gemini answer.
type writer struct{}

// Writer writes Gemini answers.
func (Format) Writer() format.Writer { return writer{} }

// Keeps: a call's arguments, until it closes (Gemini's calls go out whole).
func (writer) Keeps() format.Keeping { return format.KeepArgs }

func (writer) Open(s *format.Stream) { s.ID = s.Turn().NewID("") }

func (writer) Start(*format.Stream, *format.Item) {}

// Text builds its frame rather than through a map (same JSON, fixed key
// order): the most frequent event of all.
func (writer) Text(s *format.Stream, _ *format.Item, q []byte) {
	s.Buf = append(append(append(s.Buf, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":`...), q...), `}]},"index":0}],"modelVersion":`...)
	s.Buf = append(append(append(append(s.Buf, s.ModelJSON()...), `,"responseId":"`...), s.ID...), "\"}\n\n"...)
}

// Args writes nothing: Gemini's calls go out whole, when they end.
func (writer) Args(*format.Stream, *format.Item, string) {}

func (writer) Close(s *format.Stream, it *format.Item) {
	if it.Call != nil {
		s.Data(geminiChunk(s, []any{geminiCall(it.Call)}, "", false))
	}
}

func (writer) Final(s *format.Stream) {
	s.Data(geminiChunk(s, []any{map[string]any{"text": ""}}, geminiStopOf(s.Stop), true))
}

func (writer) Whole(s *format.Stream) any {
	parts := []any{}
	for _, it := range s.Items {
		if it.Call != nil {
			parts = append(parts, geminiCall(it.Call))
		} else {
			parts = append(parts, map[string]any{"text": it.Text.String()})
		}
	}
	return map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": geminiStopOf(s.Stop), "index": 0}},
		"usageMetadata": geminiUsage(s.Usage), "modelVersion": s.Turn().Model, "responseId": s.ID}
}
