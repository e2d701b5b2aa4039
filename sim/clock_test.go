package sim

import (
	"strings"
	"testing"
	"time"
)

func TestFastClock(t *testing.T) {
	real := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC) // a Monday
	c := &FastClock{Start: start, RealStart: real, Speed: 60, Real: func() time.Time { return real }}
	if !c.Now().Equal(start) {
		t.Fatalf("at start: %v", c.Now())
	}
	real = real.Add(time.Minute) // one real minute is one simulated hour
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("after a minute: %v", got)
	}
	real = real.Add(167 * time.Minute) // a week in under three hours at fast:60
	if got := c.Now(); !got.Equal(start.Add(168 * time.Hour)) {
		t.Fatalf("after a week: %v", got)
	}
	if c.Factor() != 60 {
		t.Fatal("factor")
	}
}

func TestParseClock(t *testing.T) {
	start := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	c, err := ParseClock("fast:3600", start)
	if err != nil || c.Factor() != 3600 || c.Now().Sub(start) < 0 || c.Now().Sub(start) > time.Hour {
		t.Fatalf("fast:3600: %v %v", c, err)
	}
	if c, err := ParseClock("real", time.Time{}); err != nil || c.Factor() != 1 {
		t.Fatal("real")
	}
	if c, err := ParseClock("real", start); err != nil || c.Now().Sub(start) > time.Minute {
		t.Fatal("real from a start")
	}
	for _, bad := range []string{"fast:", "fast:-1", "fast:abc", "slow", "fast:1e9"} {
		if _, err := ParseClock(bad, time.Time{}); err == nil || !strings.Contains(err.Error(), "--clock") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestTokensRoundTrip(t *testing.T) {
	for _, s := range []string{"[m] a b  c", "", "one", " lead", "tab\tsep\nnl"} {
		if got := strings.Join(Tokens(s), ""); got != s {
			t.Errorf("Tokens(%q) joins to %q", s, got)
		}
	}
	if n := len(Tokens(Answer("gpt-6-luna", "a b c", 16))); n != 16 {
		t.Fatalf("answer has %d tokens, want 16", n)
	}
	if Answer("m", "x", 1) != "[m] x" {
		t.Fatal(Answer("m", "x", 1))
	}
}
