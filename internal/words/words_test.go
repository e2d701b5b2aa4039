package words

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{0, "attempt", "0 attempts"}, {1, "event", "1 event"}, {2, "problem", "2 problems"}, {-1, "model", "-1 models"}, {3, "retry", "3 retries"}, {2, "key", "2 keys"}, {1, "retry", "1 retry"}} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := Plural(1, "try", "tries") + " " + Plural(3, "try", "tries"); got != "try tries" {
		t.Errorf("Plural: %q", got)
	}
}
