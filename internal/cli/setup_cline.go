package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/setup"
)

func (a *App) setupClineCmd() *cobra.Command {
	var u, configDir, model string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "cline",
		Short: "Point Cline at spillway: its provider settings",
		Long: `cline merges spillway into Cline's provider settings, providers.json
(~/.cline/data/settings/providers.json; $CLINE_DIR or --cline-dir (cline --config) moves the
directory, $CLINE_DATA_DIR the data directory, $CLINE_PROVIDER_SETTINGS_PATH the
file, in that order, as Cline reads them): the provider "cline auth -p openai -b
URL" saves (openai-compatible: Chat Completions) with the gateway's /v1 as its
baseUrl, a model (--model, else the entry's own when it pointed at the gateway
already, else the first of the configuration's codex chain), and as the
provider Cline runs (lastUsedProvider). An apiKey the entry held is emptied
(and said so; it stays in the backup): Cline then sends $OPENAI_API_KEY,
which spillway passes through. Every other
setting and provider stays, byte for byte, and the old file is kept as
providers.json.spillway-backup-<time>; the undo line is printed. Cline reads
the file as strict JSON and ignores all of it when any part is wrong, so a file
Cline cannot read is named with its line or field and left as it is, and the
result is read back as Cline reads it. --print changes nothing.`,
		Example: `  spillway setup cline
  spillway setup cline --model gpt-6-astra
  spillway setup cline --cline-dir ~/work/.cline --url http://127.0.0.1:9000
  spillway setup cline --print`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, err := a.gatewayURL(u)
			if err != nil {
				return err
			}
			path := agentfiles.ClineSettingsPath(a.Getenv, configDir)
			var existing []byte
			if path != "" {
				existing, _ = os.ReadFile(path)
			}
			if model == "" {
				first, err := a.chainFirst("codex")
				if err != nil {
					return err
				}
				model = setup.ClineModel(existing, base, first)
			}
			if printOnly {
				b, _ := json.MarshalIndent(setup.ClineSettings(base, model), "", "  ")
				if path == "" {
					path = "~/.cline/data/settings/providers.json"
				}
				fmt.Fprintf(a.Stdout, "# merge into %s (strict JSON; a new provider entry also needs \"updatedAt\" and \"tokenSource\": \"manual\"):\n%s\n", path, b)
				fmt.Fprintln(a.Stdout, "# with no apiKey in the entry, Cline sends $OPENAI_API_KEY")
				return nil
			}
			_, statErr := os.Stat(path)
			keyRemoved := setup.ClineKeyRemoved(existing)
			path, backup, err := setup.WriteCline(path, base, model, time.Now())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			at := strings.TrimRight(base, "/") + "/v1"
			a.reportMerged(merged{path: path, backup: backup, existed: statErr == nil, agent: "Cline", at: at, what: "provider openai-compatible, model " + model})
			if keyRemoved && backup != "" {
				fmt.Fprintf(a.Stderr, "note: the apiKey of providers.openai-compatible was removed (kept in %s); Cline now sends $OPENAI_API_KEY\n", backup)
			}
			if a.Getenv("OPENAI_API_KEY") == "" {
				fmt.Fprintln(a.Stderr, "note: OPENAI_API_KEY is not set here; Cline sends its value as the Bearer key")
			}
			fmt.Fprintln(a.Stdout, "start the gateway with: spillway serve")
			return nil
		},
	}
	cmd.Flags().StringVar(&u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
	cmd.Flags().StringVar(&configDir, "cline-dir", "", "Cline's configuration directory, what cline --config takes (default $CLINE_DIR or ~/.cline)")
	cmd.Flags().StringVar(&model, "model", "", "the model Cline starts with (default: the entry's own when it points at the gateway, else the codex chain's first)")
	cmd.Flags().BoolVar(&printOnly, "print", false, "change no file: print the settings to merge")
	return cmd
}
