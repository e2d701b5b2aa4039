package serve

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	for _, tc := range []struct {
		name string
		gogc string
		set  bool
		want int
	}{
		{"unset: the gateway's target", "", true, GatewayGC},
		{"the user's GOGC wins", "100", false, 100},
		{"even off", "off", false, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			env := func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			}
			if got := TuneGC(env, GatewayGC); got != tc.set {
				t.Errorf("TuneGC = %v, want %v", got, tc.set)
			}
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent = %d, want %d", got, tc.want)
			}
		})
	}
}
