package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/doctor"
)

func (a *App) doctorCmd() *cobra.Command {
	var (
		o      doctor.Options
		pages  []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Is it my account, my quota, my network, or their capacity?",
		Long: `doctor checks, for each configured provider, that the key is there and accepted
and whether quota is left (its list of models, which costs nothing), which
configured models it lists; the network path (DNS, 20 TCP connects: median,
p95, loss; the TLS handshake; against your own baseline from the last healthy
run); the providers' public status pages; what the agents know (Codex's usage
windows, the failures in Codex's and Claude Code's files over the last day); and
a proxy in the environment. With --probe it sends each configured model one
request of one output token: the only way to see capacity and rate-limit
headers. The verdict comes first.

Exit codes: 0 healthy, 3 degraded (a model at capacity, rate-limited, a slow
network, an incident on a status page), 4 broken (a key rejected, quota used
up, a provider unreachable, a model not found); 1 an error, 2 a usage mistake.`,
		Example: `  spillway doctor
  spillway doctor --probe
  spillway doctor --offline --json | jq .verdict`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			o.Config, o.Getenv = cfg, a.Getenv
			if len(pages) > 0 {
				o.StatusPages = map[string]string{}
				for k, v := range doctor.DefaultStatusPages {
					o.StatusPages[k] = v
				}
				for _, p := range pages {
					name, url, ok := strings.Cut(p, "=")
					if !ok || name == "" || url == "" {
						return fail(ExitUsage, "--status-page %q: write PROVIDER=URL (a Statuspage site, e.g. openai=https://status.openai.com)", p)
					}
					o.StatusPages[name] = url
				}
			}
			o.StateDir = a.stateDir()
			r := doctor.Run(cmd.Context(), o)
			if asJSON {
				err = doctor.JSON(a.Stdout, r)
			} else {
				err = doctor.Text(a.Stdout, r)
			}
			if err != nil {
				return fail(ExitFail, "%v", err)
			}
			if code := r.ExitCode(); code != 0 {
				return exitQuietly(code)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Probe, "probe", false, "send each configured model one request of one output token (capacity and rate-limit headers need it)")
	f.BoolVar(&o.Offline, "offline", false, "skip the providers' status pages")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.IntVar(&o.Samples, "samples", 20, "TCP connects per host")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Second, "the longest each check may take")
	f.StringArrayVar(&pages, "status-page", nil, "PROVIDER=URL of a Statuspage site (repeatable; default OpenAI's and Anthropic's)")
	f.StringVar(&o.CodexHome, "codex-home", "", "Codex CLI's directory (default $CODEX_HOME or ~/.codex)")
	f.StringVar(&o.ClaudeHome, "claude-home", "", "Claude Code's directory (default $CLAUDE_CONFIG_DIR or ~/.claude)")
	return cmd
}

// stateDir is where spillway keeps state: $XDG_STATE_HOME/spillway, else
// ~/.local/state/spillway ("" without a home).
func (a *App) stateDir() string { return events.StateDir(a.Getenv) }
