package wire

import (
	"testing"
)

// BenchmarkValidJSON is the check every event of every stream passes; its
// cost (and that it allocates nothing) is recorded in BENCHMARKS.md, not
// asserted in a test (the race detector's build allocates).
func BenchmarkValidJSON(b *testing.B) {
	d := []byte(`{"id":"chatcmpl-000000010001","object":"chat.completion.chunk","created":1767225600,"model":"gpt-6-luna","choices":[{"index":0,"delta":{"content":" spill"},"finish_reason":null}]}`)
	b.ReportAllocs()
	for b.Loop() {
		ValidJSON(d)
	}
}
