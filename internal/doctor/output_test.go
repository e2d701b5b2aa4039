package doctor_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/doctor"
)

// The table fits 100 columns: a long finding (every model of a provider)
// wraps beside its row instead of padding every row to its width.
func TestTextTableFitsATerminal(t *testing.T) {
	models := strings.Repeat("gpt-6.1-terra, ", 12)
	r := doctor.Report{Verdict: "fine", Cost: "nothing", Findings: []doctor.Finding{
		{Area: "models", Subject: "openai", Status: doctor.Healthy, Summary: "listed: " + models},
		{Area: "key", Subject: "anthropic", Status: doctor.Healthy, Summary: "key accepted", Evidence: "GET /v1/models with ANTHROPIC_API_KEY: 200"},
	}}
	var b strings.Builder
	if err := doctor.Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 100 {
			t.Errorf("a line of %d columns: %q", len(l), l)
		}
	}
	if !strings.Contains(out, "healthy  key     anthropic  key accepted\n                            evidence: GET /v1/models with ANTHROPIC_API_KEY: 200\n") || strings.Count(out, "gpt-6.1-terra") != 12 {
		t.Fatalf("table:\n%s", out)
	}
}
