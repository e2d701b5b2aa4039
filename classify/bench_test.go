package classify

import (
	"net/http"
	"testing"
	"time"
)

var benchNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func BenchmarkClassifyHTTP(b *testing.B) {
	body := []byte(`{"error":{"message":"Our servers are currently overloaded. Please try again later.","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}}`)
	h := http.Header{"Retry-After": {"2"}}
	b.ReportAllocs()
	for b.Loop() {
		if Classify(Input{Status: 503, Header: h, Body: body, Now: benchNow}).Class != Capacity {
			b.Fatal("wrong class")
		}
	}
}

func BenchmarkClassifyEvent(b *testing.B) {
	data := []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if Classify(Input{Event: "error", Body: data, Now: benchNow}).Class != Capacity {
			b.Fatal("wrong class")
		}
	}
}

func BenchmarkClassifyText(b *testing.B) {
	line := "ERROR: Selected model is at capacity. Please try a different model."
	b.ReportAllocs()
	for b.Loop() {
		if Classify(Input{Text: line, Now: benchNow}).Class != Capacity {
			b.Fatal("wrong class")
		}
	}
}
