package classify_test

import (
	"testing"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/classifytest"
)

func loadCorpus(t testing.TB) []classifytest.Entry {
	return classifytest.Load(t, "../testdata/classify")
}

func TestCorpus(t *testing.T) {
	entries := loadCorpus(t)
	if len(entries) < 100 {
		t.Fatalf("corpus has %d entries; it is meant to cover every shape the providers and clients send (docs/client-notes.md)", len(entries))
	}
	for _, e := range entries {
		t.Run(e.File+"/"+e.Name, func(t *testing.T) {
			v := classify.Classify(e.Input(t))
			if string(v.Class) != e.Want.Class {
				t.Errorf("class = %s, want %s (code %q, message %q)", v.Class, e.Want.Class, v.Code, v.Message)
			}
			if e.Want.Provider != "" && string(v.Provider) != e.Want.Provider {
				t.Errorf("provider = %s, want %s", v.Provider, e.Want.Provider)
			}
			if e.Want.Retryable != nil && v.Retryable != *e.Want.Retryable {
				t.Errorf("retryable = %v, want %v", v.Retryable, *e.Want.Retryable)
			}
			if want, ok := e.WantWait(t); ok {
				if v.Wait != want {
					t.Errorf("wait = %v, want %v", v.Wait, want)
				}
			}
			if v.Class == classify.UsageLimit && v.Wait > 0 && v.ResetsAt.IsZero() {
				t.Errorf("a usage limit with a wait of %v says no reset time", v.Wait)
			}
			if v.Class != classify.UsageLimit && !v.ResetsAt.IsZero() {
				t.Errorf("a %s with a reset time", v.Class)
			}
			if e.Want.Notice != nil && v.Notice != *e.Want.Notice {
				t.Errorf("notice = %v, want %v", v.Notice, *e.Want.Notice)
			}
			if v.Summary == "" || v.Action == "" {
				t.Errorf("verdict without explanation: %+v", v)
			}
		})
	}
}

func TestCapacityNeverNetwork(t *testing.T) {
	// Every capacity-shaped entry of the corpus must never come out network,
	// and every transport error never capacity: the one confusion users pay
	// for most.
	for _, e := range loadCorpus(t) {
		v := classify.Classify(e.Input(t))
		if e.Want.Class == "capacity" && (v.Class == classify.Network || v.Class == classify.Timeout) {
			t.Errorf("%s: capacity classified %s", e.Name, v.Class)
		}
		if (e.Want.Class == "network" || e.Want.Class == "timeout") && v.Class == classify.Capacity {
			t.Errorf("%s: network classified capacity", e.Name)
		}
	}
}
