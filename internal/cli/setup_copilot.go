package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/setup"
)

func (a *App) setupCopilotCmd() *cobra.Command {
	var shell, u, envKey, typ, wire, model string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "copilot",
		Short: "Print the environment that points GitHub Copilot CLI at spillway (its own-provider mode)",
		Long: `copilot prints, in the syntax of a shell (default: the one $SHELL names, else
sh), the environment of GitHub Copilot CLI's bring-your-own-provider mode
pointed at the gateway: COPILOT_PROVIDER_BASE_URL (the gateway's /v1),
COPILOT_PROVIDER_TYPE, COPILOT_PROVIDER_WIRE_API, COPILOT_MODEL, and
COPILOT_PROVIDER_API_KEY taken from the variable --env-key names when the
lines run (the key's value is never printed). The variables that would
override these (a bearer token, a key command, a wire model) are unset
first. No GitHub sign-in is needed or used in this mode.

It writes no file, with or without --print (which is accepted, and is
what it always does): Copilot CLI reads its provider from the environment
only, and nothing in its settings.json has to change (its "model" is not
read in this mode).

--wire responses makes Copilot speak the Responses API (/v1/responses)
instead of Chat Completions; --type anthropic makes it speak Anthropic's
Messages (the gateway's /v1/messages, with the key as x-api-key). The model
is --model, else the first of the configuration's chain for the format
(codex for openai, claude for anthropic).`,
		Example: `  eval "$(spillway setup copilot)"
  eval "$(spillway setup copilot --env-key SPILLWAY_KEY --model gpt-6.1-sol)"
  eval "$(spillway setup copilot --wire responses)"
  eval "$(spillway setup copilot --type anthropic)"
  spillway setup copilot --shell fish | source
  spillway setup copilot --shell powershell | Invoke-Expression`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch typ {
			case setup.CopilotOpenAI, setup.CopilotAnthropic:
			default:
				return fail(ExitUsage, "--type %q: give openai (Chat Completions or Responses at the gateway's /v1) or anthropic (Messages at /v1/messages)", typ)
			}
			switch wire {
			case setup.CopilotChat, setup.CopilotResponses:
			default:
				return fail(ExitUsage, "--wire %q: give chat (Chat Completions) or responses (the Responses API)", wire)
			}
			if typ == setup.CopilotAnthropic && cmd.Flags().Changed("wire") {
				return fail(ExitUsage, "--wire goes with --type openai: with --type anthropic Copilot speaks Messages")
			}
			if !cmd.Flags().Changed("env-key") && typ == setup.CopilotAnthropic {
				envKey = "ANTHROPIC_API_KEY"
			}
			if err := setup.CheckEnvKey(envKey); err != nil || envKey == "" {
				return fail(ExitUsage, "--env-key %q: give the name of the variable that holds your key (like %s), never the key", envKey, setup.DefaultEnvKey)
			}
			sh, base, err := a.shellAndURL(shell, u)
			if err != nil {
				return err
			}
			if model == "" {
				chain := "codex"
				if typ == setup.CopilotAnthropic {
					chain = "claude"
				}
				if model, err = a.chainFirst(chain); err != nil {
					return err
				}
			}
			if a.Getenv(envKey) == "" {
				fmt.Fprintf(a.Stderr, "note: %s is not set here; Copilot sends its value as the provider key (COPILOT_PROVIDER_API_KEY)\n", envKey)
			}
			_ = printOnly // what setup copilot always does
			_, err = fmt.Fprint(a.Stdout, setup.CopilotEnv(setup.CopilotSetup{BaseURL: base, Type: typ, Wire: wire, Model: model, EnvKey: envKey}, sh))
			return err
		},
	}
	shellFlags(cmd, &shell, &u)
	f := cmd.Flags()
	f.StringVar(&envKey, "env-key", setup.DefaultEnvKey, "environment variable whose value Copilot sends as its provider key (default ANTHROPIC_API_KEY with --type anthropic)")
	f.StringVar(&typ, "type", setup.CopilotOpenAI, "Copilot's provider type: openai or anthropic")
	f.StringVar(&wire, "wire", setup.CopilotChat, "with --type openai, the API Copilot speaks: chat (Chat Completions) or responses")
	f.StringVar(&model, "model", "", "COPILOT_MODEL (default: the first model of the configuration's codex chain, claude's with --type anthropic)")
	f.BoolVar(&printOnly, "print", false, "print the environment and write nothing (what setup copilot always does)")
	return cmd
}

// chainFirst is the model a setup names when --model names none: the
// first of the configuration's chain (the built-in one when the
// configuration has no such chain); a configuration that cannot be read is
// an error, as for every setup.
func (a *App) chainFirst(chain string) (string, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return "", err
	}
	if c := cfg.Chains[chain]; len(c) > 0 {
		return c[0], nil
	}
	return config.Default().Chains[chain][0], nil
}
