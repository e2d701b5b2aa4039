package events

import (
	"strconv"
	"time"

	"github.com/spillway/spillway/internal/jsonw"
)

// appendRecord appends r as one JSON line: what encoding/json's Encoder
// writes (HTML left unescaped: error strings often quote HTML; they stay
// readable) for wireRecord{ts, &r}, byte for byte
// (FuzzAppendRecord holds it to that), without its reflection walk. Every
// upstream attempt is one record, so this is on every request's bill; a
// new field of Record must be added here too (the fuzz test fails until
// it is).
func appendRecord(b []byte, ts time.Time, r *Record) []byte {
	b = append(b, `{"ts":"`...)
	b = ts.AppendFormat(b, tsLayout)
	b = append(b, '"')
	b = jsonw.String(append(b, `,"request_id":`...), r.RequestID, false)
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(r.Attempt), 10)
	b = jsonw.String(append(b, `,"source":`...), r.Source, false)
	b = jsonw.String(append(b, `,"provider":`...), r.Provider, false)
	b = jsonw.String(append(b, `,"model":`...), r.Model, false)
	if r.Deployment != "" {
		b = jsonw.String(append(b, `,"deployment":`...), r.Deployment, false)
	}
	b = jsonw.String(append(b, `,"requested_model":`...), r.RequestedModel, false)
	b = jsonw.String(append(b, `,"endpoint":`...), r.Endpoint, false)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
	b = jsonw.String(append(b, `,"class":`...), r.Class, false)
	b = strconv.AppendInt(append(b, `,"latency_ms":`...), r.LatencyMS, 10)
	b = strconv.AppendInt(append(b, `,"ttfb_ms":`...), r.TTFBMS, 10)
	b = strconv.AppendInt(append(b, `,"req_bytes":`...), r.ReqBytes, 10)
	b = strconv.AppendInt(append(b, `,"est_input_tokens":`...), int64(r.EstInputTokens), 10)
	b = strconv.AppendInt(append(b, `,"output_tokens":`...), int64(r.OutputTokens), 10)
	b = strconv.AppendBool(append(b, `,"stream":`...), r.Stream)
	b = jsonw.String(append(b, `,"fallback_from":`...), r.FallbackFrom, false)
	b = strconv.AppendInt(append(b, `,"wait_ms":`...), r.WaitMS, 10)
	b = jsonw.String(append(b, `,"error":`...), r.Error, false)
	if r.Route != "" {
		b = jsonw.String(append(b, `,"route":`...), r.Route, false)
	}
	if r.CallerEnded {
		b = append(b, `,"caller_ended":true`...)
	}
	if r.HedgeLost {
		b = append(b, `,"hedge_lost":true`...)
	}
	if r.TranslatedFrom != "" {
		b = jsonw.String(append(b, `,"translated_from":`...), r.TranslatedFrom, false)
	}
	return append(b, '}', '\n')
}

// appendGap appends the gap line of g:
// {"gap":{"lost":N,"from":…,"until":…,"error":…}}, from and until (in ts's
// layout) only when known; Read gives it back as a Record with only Gap
// set.
func appendGap(b []byte, g *Gap) []byte {
	b = strconv.AppendUint(append(b, `{"gap":{"lost":`...), g.Lost, 10)
	if !g.From.IsZero() {
		b = append(g.From.UTC().AppendFormat(append(b, `,"from":"`...), tsLayout), '"')
	}
	if !g.Until.IsZero() {
		b = append(g.Until.UTC().AppendFormat(append(b, `,"until":"`...), tsLayout), '"')
	}
	b = jsonw.String(append(b, `,"error":`...), g.Error, false)
	return append(b, '}', '}', '\n')
}
