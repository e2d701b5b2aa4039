package gemini

import (
	"encoding/json"

	"github.com/spillway/spillway/internal/format"
)

func (rd *reader) geminiEvent(data []byte) ([]format.Event, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if r := format.Obj(m["response"]); r != nil { // Code Assist's wrapping
		m = r
	}
	if e := format.Obj(m["error"]); e != nil {
		return []format.Event{{Kind: format.EvError, Text: format.Str(e["message"]), EType: format.Str(e["status"]), Status: format.IntOf(e["code"])}}, nil
	}
	var out []format.Event
	if id := format.Str(m["responseId"]); id != "" {
		out = append(out, format.Event{Kind: format.EvStart, ID: id})
	}
	stop := ""
	calls := false
	for _, c := range format.Objs(m["candidates"]) {
		for _, p := range format.Objs(format.Obj(c["content"])["parts"]) {
			switch {
			case p["thought"] == true:
			case p["functionCall"] != nil:
				fc := format.Obj(p["functionCall"])
				n := rd.calls
				rd.calls++
				calls = true
				out = append(out, format.Event{Kind: format.EvCallStart, Call: n, ID: format.Str(fc["id"]), Name: format.Str(fc["name"])},
					format.Event{Kind: format.EvCallArgs, Call: n, Text: format.ArgsText(fc["args"])})
			case format.Str(p["text"]) != "":
				out = append(out, format.Event{Kind: format.EvText, Text: format.Str(p["text"])})
			}
		}
		if fr := format.Str(c["finishReason"]); fr != "" {
			stop = geminiStop(fr)
		}
	}
	if u := format.Obj(m["usageMetadata"]); u != nil {
		rd.usage = format.Usage{Input: format.IntOf(u["promptTokenCount"]), Output: format.IntOf(u["candidatesTokenCount"]) + format.IntOf(u["thoughtsTokenCount"]),
			Cached: format.IntOf(u["cachedContentTokenCount"]), Reasoning: format.IntOf(u["thoughtsTokenCount"])}
		out = append(out, format.Event{Kind: format.EvUsage, Usage: rd.usage})
	}
	if stop != "" {
		if stop == format.StopEnd && (calls || rd.calls > 0) {
			stop = format.StopTool
		}
		out = append(out, format.Event{Kind: format.EvFinish, Stop: stop}, format.Event{Kind: format.EvEnd})
	}
	return out, nil
}

func geminiStop(s string) string {
	switch s {
	case "MAX_TOKENS":
		return format.StopLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return format.StopFilter
	}
	return format.StopEnd
}

// reader reads a Gemini answer into neutral events.
type reader struct {
	calls int
	usage format.Usage
}

// NewReader reads one Gemini answer.
func (Format) NewReader() format.EventReader { return &reader{} }

// Event is the neutral events of one chunk.
func (rd *reader) Event(_ string, data []byte) ([]format.Event, error) { return rd.geminiEvent(data) }

// Whole is the neutral events of a whole answer.
func (rd *reader) Whole(body []byte) ([]format.Event, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	out, err := rd.geminiEvent(body)
	if len(out) == 0 || out[len(out)-1].Kind != format.EvEnd {
		out = append(out, format.Event{Kind: format.EvFinish, Stop: format.StopEnd}, format.Event{Kind: format.EvEnd})
	}
	return out, err
}
