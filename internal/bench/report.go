package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spillway/spillway/internal/words"
)

// WriteText prints the report as a table, one client per row.
func (r *ResilienceReport) WriteText(out io.Writer) {
	fmt.Fprintf(out, "resilience: %s (min tier: %d heavy, %d medium, %d light), scenario %s from %s, clock %s, %d at a time per client; spillway's breaker holds %s (up to %s)\n\n",
		words.Count(r.Tasks, "task"), r.MinTiers["heavy"], r.MinTiers["medium"], r.MinTiers["light"], r.Scenario, r.SimStart.Format("Mon 15:04 MST"), r.Clock, r.Concurrency, r.Cooldown, r.MaxCooldown)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tcompleted\tattempts/task\trejected\tmakespan\t× bound\tp50\tp95\tbelow tier\t")
	for _, c := range r.Clients {
		fmt.Fprintf(tw, "%s\t%d/%d %s\t%s\t%s\t%.1fs\t%s\t%s\t%s\t%d (%s)\t\n", c.Name, c.Completed, c.Tasks, pct(c.CompletionRate),
			num(c.AttemptsPerTask, "%.2f"), pct(c.RejectedShare), c.MakespanS, num(c.MakespanRatio, "%.1f"),
			num(c.P50S, "%.1fs"), num(c.P95S, "%.1fs"), c.BelowTierTasks, pct(c.BelowTier))
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, c := range r.Clients {
		models := make([]string, 0, len(c.ServedBy))
		for m, n := range c.ServedBy {
			models = append(models, fmt.Sprintf("%s %d", m, n))
		}
		sort.Strings(models)
		line := fmt.Sprintf("  %-17s served by: %s", c.Name, strings.Join(models, ", "))
		if len(models) == 0 {
			line = fmt.Sprintf("  %-17s served nothing", c.Name)
		}
		if c.Error != "" {
			line += "; error: " + c.Error
		}
		fmt.Fprintln(out, line)
		whys := make([]string, 0, len(c.Failures))
		for why := range c.Failures {
			whys = append(whys, why)
		}
		sort.Strings(whys)
		for _, why := range whys {
			fmt.Fprintf(out, "  %-17s %d× %s\n", "", c.Failures[why], why)
		}
	}
	if len(r.Clients) > 0 {
		fmt.Fprintf(out, "\nThe bound: %.1fs, the least time any client could take given the room the simulated background load leaves\n", r.Clients[0].LowerBoundS)
		fmt.Fprintln(out, "in each pool (× bound only for clients that completed every task). Attempts and rejections are the simulator's counts;")
		fmt.Fprintln(out, "p50/p95 are the times from the batch's start to each completed task's answer.")
	}
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func num(x *float64, format string) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf(format, *x)
}
