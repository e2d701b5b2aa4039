package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/setup"
	"github.com/spillway/spillway/internal/wire"
)

func (a *App) setupOpenCodeCmd() *cobra.Command {
	var u, dir, envKey string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "opencode",
		Short: "Add a spillway provider to OpenCode's opencode.json",
		Long: `opencode merges into OpenCode's global configuration ($XDG_CONFIG_HOME/opencode
or ~/.config/opencode: opencode.jsonc when there is one, else opencode.json) a
custom provider named spillway: the @ai-sdk/openai-compatible package (Chat
Completions), baseURL the gateway's /v1, apiKey "{env:OPENAI_API_KEY}" (OpenCode
puts the variable's value there when it reads the file; --env-key names another;
no key is ever written), and the configuration's models (the OpenAI ones, and
every model when a chain crosses vendors, since the gateway translates). Then
opencode run -m spillway/<model> runs through the gateway.

The file is edited in place (its comments, trailing commas and indentation
stay; settings of your own on a model stay), the old file is kept as
<file>.spillway-backup-<time> with the line that restores it printed, and the
result is read back as OpenCode reads it (JSONC); a file OpenCode cannot read
is named with its line and column, and left as it is. Running it again
changes nothing. --print changes no file and prints the JSON to merge.`,
		Example: `  spillway setup opencode
  spillway setup opencode --print
  spillway setup opencode --env-key SPILLWAY_OPENAI_KEY
  spillway setup opencode --config-dir ~/work/.config/opencode --url http://127.0.0.1:9000
  opencode run -m spillway/gpt-6-astra "fix the failing test"`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := setup.CheckEnvKey(envKey); err != nil {
				return fail(ExitUsage, "--env-key: %w", err)
			}
			if envKey == "" {
				return fail(ExitUsage, "--env-key \"\": give the name of the variable that holds your key (like %s)", setup.DefaultEnvKey)
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			base := "http://" + clientAddr(cfg.Listen)
			if u != "" {
				if base, err = a.gatewayURL(u); err != nil {
					return err
				}
			}
			models := openCodeModels(cfg)
			if len(models) == 0 {
				return fail(ExitFail, "the spillway configuration has no model OpenCode can ask for over Chat Completions (an OpenAI model, or any model when a chain crosses vendors); add one, then run spillway setup opencode again")
			}
			settings := setup.OpenCodeSettings(base, envKey, models)
			if dir == "" {
				dir = agentfiles.OpenCodeConfigDir(a.Getenv)
			}
			if printOnly {
				b, _ := json.MarshalIndent(settings, "", "  ")
				fmt.Fprintf(a.Stderr, "# merge into %s (without --print, setup merges it for you):\n", filepath.Join(dir, setup.OpenCodeFile(dir)))
				_, err := fmt.Fprintf(a.Stdout, "%s\n", b)
				return err
			}
			path := filepath.Join(dir, setup.OpenCodeFile(dir))
			_, statErr := os.Stat(path)
			path, backup, err := setup.WriteOpenCode(dir, settings, time.Now())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			what := fmt.Sprintf("provider spillway, %d models, the key from $%s", len(models), envKey)
			a.reportMerged(merged{path: path, backup: backup, existed: statErr == nil, agent: "OpenCode", at: base + "/v1", what: what})
			if a.Getenv(envKey) == "" {
				fmt.Fprintf(a.Stderr, "note: %s is not set here; OpenCode sends its value as the Bearer key (an empty one when unset)\n", envKey)
			}
			if c := a.Getenv("OPENCODE_CONFIG"); c != "" {
				fmt.Fprintf(a.Stderr, "note: OPENCODE_CONFIG=%s is read after %s, and what it sets of provider.spillway wins\n", c, path)
			}
			fmt.Fprintf(a.Stdout, "start the gateway with: spillway serve\nthen: opencode run -m spillway/%s \"…\"\n", models[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
	f.StringVar(&dir, "config-dir", "", "OpenCode's configuration directory (default $XDG_CONFIG_HOME/opencode or ~/.config/opencode)")
	f.StringVar(&envKey, "env-key", setup.DefaultEnvKey, "environment variable whose value OpenCode sends as the Bearer key ({env:VAR} in the file)")
	f.BoolVar(&printOnly, "print", false, "change no file: print the JSON to merge")
	return cmd
}

// openCodeModels are the models setup opencode lists: the configuration's
// OpenAI models (what OpenCode's Chat Completions ask for), and every model
// when a chain crosses vendors (the gateway translates); the first chain's
// models first, sorted, the codex chain's first model first.
func openCodeModels(cfg *config.Config) []string {
	cross := cfg.CrossVendor()
	// the format of what OpenCode sends: its Chat Completions endpoint's
	chat := wire.Endpoints[slices.IndexFunc(wire.Endpoints, func(e wire.Endpoint) bool { return e.Path == "/v1/chat/completions" })].Format
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		if cross || wire.Format(cfg.ModelType(name)) == chat {
			out = append(out, name)
		}
	}
	// the codex chain's first (an OpenAI chain's) first: the model the
	// printed example runs
	if c := cfg.Chains["codex"]; len(c) > 0 {
		if i := slices.Index(out, c[0]); i > 0 {
			out = append([]string{c[0]}, slices.Delete(out, i, i+1)...)
		}
	}
	return out
}
