package policy

import (
	"testing"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// BenchmarkRoute is the routing every request pays: a plan for the heavy
// model and its first step, then (the fallback case) a capacity answer and
// the step to the next tier.
func BenchmarkRoute(b *testing.B) {
	e := New(config.Default())
	capacity := classify.Verdict{Class: classify.Capacity}
	b.Run("start", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := e.newPlan(Request{Model: "gpt-6-astra", Type: "openai", InputTokens: 2000})
			if st := p.start(); st.Action != send {
				b.Fatal(st)
			}
		}
	})
	b.Run("fallback", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := e.newPlan(Request{Model: "gpt-6-astra", Type: "openai", InputTokens: 2000, MinTier: config.Medium})
			p.start()
			if st := p.after(capacity); st.Candidate.Model != "gpt-6.1-sol" {
				b.Fatal(st)
			}
		}
	})
}
