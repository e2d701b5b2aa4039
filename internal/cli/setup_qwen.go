package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/setup"
)

func (a *App) setupQwenCmd() *cobra.Command {
	var u, home, envKey string
	var models []string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "qwen",
		Short: "Point Qwen Code at spillway: OpenAI-compatible models in its settings.json",
		Long: `qwen merges into Qwen Code's settings.json ($QWEN_HOME, else ~/.qwen)
OpenAI-compatible auth (security.auth.selectedType "openai"), the first
--model as model.name, and one modelProviders.openai entry per --model with
the gateway's /v1 as its baseUrl, the key from the environment variable
--env-key names (never the key itself), the Responses API (wireApi
"responses": there Qwen Code honours the gateway's x-should-retry: false,
and gives up after one walk of a chain that stays full, where on Chat
Completions it would ask seven times) and generationConfig.maxRetries 0:
the gateway has walked the chain already, and Qwen Code's own retries of a
full model (its SDK's, then a loop that waits 60 s to 5 min) would only add
minutes. Your other modelProviders entries stay, in their order; spillway's
are replaced. Where you have Qwen Code's own modelFallbacks, setup turns
them off (""): the gateway falls back inside each request, and Qwen Code's
fallbacks through the same gateway would each be tried seven times more
before it exits.

The file is edited in place (its comments and indentation stay; the
modelProviders.openai array is written whole) and read back as Qwen Code
reads it: comments but no trailing commas. A file Qwen Code cannot read is
named with its line and column, and left as it is. The old file is kept
beside it as settings.json.spillway-backup-<time>; setup prints the command
that puts it back. --print changes nothing and prints the settings to merge.
With no --model, the first model of the configuration's codex chain. An
entry of yours with the id of a --model is refused, named: spillway's
entry would replace it.`,
		Example: `  spillway setup qwen --model gpt-6-sol
  spillway setup qwen --model gpt-6-sol --model gpt-6.1-sol --env-key OPENAI_API_KEY
  spillway setup qwen --model gpt-6-sol --print
  qwen --yolo "fix the failing test"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, err := a.gatewayURL(u)
			if err != nil {
				return err
			}
			if err := setup.CheckEnvKey(envKey); err != nil || envKey == "" {
				return fail(ExitUsage, "--env-key %q: give the name of the variable that holds your key (like %s), never the key", envKey, setup.DefaultEnvKey)
			}
			if home == "" {
				home = agentfiles.QwenHome(a.Getenv, "")
			}
			o := setup.QwenOptions{BaseURL: strings.TrimSuffix(base, "/") + "/v1", Models: models, EnvKey: envKey}
			if len(o.Models) == 0 {
				// the gateway's models: never the file's own model.name,
				// which may be a provider's of the user's
				c, err := a.loadConfig()
				if err != nil {
					return err
				}
				if chain := c.Chains["codex"]; len(chain) > 0 {
					o.Models = []string{chain[0]}
				} else {
					return fail(ExitUsage, "the configuration has no codex chain to take a model from: give --model")
				}
			}
			if printOnly {
				fmt.Fprintf(a.Stdout, "# merge into %s/settings.json (modelProviders.openai: your other entries stay; modelFallbacks only where you have some):\n%s\n", home, setup.QwenPrint(o))
				fmt.Fprintf(a.Stdout, "# the key: export %s=… (Qwen Code sends it; the gateway passes it on)\n", envKey)
				return nil
			}
			_, statErr := os.Stat(filepath.Join(home, "settings.json"))
			path, backup, err := setup.WriteQwen(home, o, time.Now())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			what := fmt.Sprintf("for %s, the key from $%s, no retries of its own", strings.Join(o.Models, ", "), envKey)
			a.reportMerged(merged{path: path, backup: backup, existed: statErr == nil, agent: "Qwen Code", at: o.BaseURL, what: what})
			fmt.Fprintln(a.Stdout, "start the gateway with: spillway serve")
			if a.Getenv(envKey) == "" {
				fmt.Fprintf(a.Stderr, "note: %s is not set here; Qwen Code sends it as the key: export %s=…\n", envKey, envKey)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
	cmd.Flags().StringArrayVar(&models, "model", nil, "a model to ask the gateway for (repeat for more; the first becomes model.name; default: the first of the codex chain)")
	cmd.Flags().StringVar(&envKey, "env-key", "OPENAI_API_KEY", "the environment variable Qwen Code reads the key from")
	cmd.Flags().StringVar(&home, "qwen-home", "", "Qwen Code's directory (default $QWEN_HOME or ~/.qwen)")
	cmd.Flags().BoolVar(&printOnly, "print", false, "change no file: print the settings to merge")
	return cmd
}
