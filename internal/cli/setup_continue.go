package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/internal/setup"
)

func (a *App) setupContinueCmd() *cobra.Command {
	var u, dir, envKey, model string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "continue",
		Short: "Add a spillway model to Continue's CLI (cn): its config.yaml",
		Long: `continue merges into cn's config.yaml ($CONTINUE_GLOBAL_DIR/config.yaml, default
~/.continue/config.yaml) a model named spillway: provider openai, apiBase the
gateway's /v1, and the key as ${{ secrets.OPENAI_API_KEY }} (--env-key names
another variable), which cn fills in from its environment or ~/.continue/.env:
no key is written. It goes first in models, since cn runs the first model with
the chat role; a spillway model already there is replaced where it stands. The
rest of the file stays byte for byte, comments and all; the old file is kept as
config.yaml.spillway-backup-<time>. The result is read back as cn 1.5.47 reads
it (YAML, then its schema: name, version, models with a name, provider and
model, roles of its list): a file cn cannot read is named with its line and
left as it is. A new file names the assistant too (name, version, schema v1).
--print changes nothing and prints the entry.

The model is the first of the configuration's codex chain unless --model names
another; the gateway's chain for it decides where requests go when it is full.
Run cn with -p (headless) or as usual; it needs no sign-in with this file.`,
		Example: `  spillway setup continue
  spillway setup continue --print
  spillway setup continue --model gpt-6.1-sol --env-key SPILLWAY_OPENAI_KEY
  spillway setup continue --continue-dir ~/work/.continue --url http://127.0.0.1:8790`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := setup.CheckEnvKey(envKey); err != nil {
				return fail(ExitUsage, "--env-key: %w", err)
			}
			base, err := a.gatewayURL(u)
			if err != nil {
				return err
			}
			if model == "" {
				c, err := a.loadConfig()
				if err != nil {
					return err
				}
				if chain := c.Chains["codex"]; len(chain) > 0 {
					model = chain[0]
				}
				if model == "" {
					return fail(ExitUsage, "the configuration has no codex chain to take a model from: give --model")
				}
			}
			s := setup.ContinueSetup{BaseURL: base, Model: model, EnvKey: envKey}
			if printOnly {
				fmt.Fprintf(a.Stderr, "# the entry to put first under models: in ~/.continue/config.yaml (cn runs the first chat model); without --print, setup merges it for you.\n")
				_, err := fmt.Fprint(a.Stdout, s.Entry(""))
				return err
			}
			if dir == "" {
				dir = setup.ContinueDir(a.Getenv)
			}
			if dir == "" {
				return fail(ExitUsage, "neither CONTINUE_GLOBAL_DIR nor HOME is set; give --continue-dir DIR")
			}
			return a.writeContinueSetup(dir, s)
		},
	}
	cmd.Flags().StringVar(&u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
	cmd.Flags().StringVar(&dir, "continue-dir", "", "cn's directory (default $CONTINUE_GLOBAL_DIR or ~/.continue)")
	cmd.Flags().StringVar(&envKey, "env-key", setup.DefaultEnvKey, "environment variable whose value cn sends as the key (${{ secrets.NAME }})")
	cmd.Flags().StringVar(&model, "model", "", "the model cn asks the gateway for (default the first of the codex chain)")
	cmd.Flags().BoolVar(&printOnly, "print", false, "change no file: print the model entry")
	return cmd
}

// writeContinueSetup merges the entry into dir/config.yaml and says what it
// did and how to undo it.
func (a *App) writeContinueSetup(dir string, s setup.ContinueSetup) error {
	file := filepath.Join(dir, setup.ContinueFile)
	_, statErr := os.Stat(file)
	path, backup, err := setup.WriteContinue(dir, s, time.Now())
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	at := setup.BaseURL(s.BaseURL) + "/v1"
	a.reportMerged(merged{path: path, backup: backup, existed: statErr == nil, agent: "cn", at: at, what: "running " + s.Model, text: s.Entry("  ")})
	key := s.EnvKey
	if key == "" {
		key = setup.DefaultEnvKey
	}
	if a.Getenv(key) == "" {
		fmt.Fprintf(a.Stderr, "note: %s is not set here; cn sends its value as the key (or put %s=… in %s)\n", key, key, filepath.Join(dir, ".env"))
	}
	if b, err := os.ReadFile(path); err == nil {
		if first := setup.ContinueFirstChat(b); first != setup.ContinueEntryName {
			fmt.Fprintf(a.Stderr, "note: cn runs the first chat model of %s, and that is %q: move the spillway entry up to use it\n", path, first)
		}
	}
	if picked := continuePicked(dir); picked != "" && picked != setup.ContinueEntryName {
		fmt.Fprintf(a.Stderr, "note: cn runs the model picked in its TUI (%q, kept in %s) before the file's first; pick spillway with /model\n", picked, filepath.Join(dir, "index", "globalContext.json"))
	}
	fmt.Fprintln(a.Stdout, "start the gateway with: spillway serve")
	return nil
}

// continuePicked is the model picked in cn's TUI (cliSelectedModel in
// its index/globalContext.json), which cn runs before config.yaml's first.
func continuePicked(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "index", "globalContext.json"))
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return ""
	}
	var g struct {
		CLISelectedModel string `json:"cliSelectedModel"`
	}
	_ = json.Unmarshal(b, &g)
	return g.CLISelectedModel
}
