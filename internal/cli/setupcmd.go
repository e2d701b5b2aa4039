package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway/spillway/config"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/setup"
	"github.com/spillway/spillway/internal/wire"
)

func (a *App) setupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Point an agent at the spillway gateway; alone, list the agents and which are set up",
		Long: `setup <agent> points one agent at the gateway: Codex CLI, Claude Code, Gemini CLI,
OpenCode, GitHub Copilot CLI, Qwen Code, Cline or Continue's cn (see each one's
help). setup alone changes nothing: it lists the agents spillway knows, where each one's
command is on PATH, and whether it is already set up for spillway, for which
sign-in, and the file or variable that says so (variables as this shell has
them: run it where you run the agent).`,
		Example: `  spillway setup
  spillway setup codex
  spillway setup opencode --print`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.listAgents() },
	}
	cmd.AddCommand(a.setupCodexCmd(), a.setupClaudeCmd(), a.setupGeminiCmd(),
		a.setupOpenCodeCmd(), a.setupCopilotCmd(), a.setupQwenCmd(), a.setupClineCmd(), a.setupContinueCmd(),
		a.setupServiceCmd())
	return cmd
}

// gatewayURL is --url, or http://<listen> from the configuration.
func (a *App) gatewayURL(flag string) (string, error) {
	if flag != "" {
		if err := setup.CheckURL(flag); err != nil {
			return "", fail(ExitUsage, "--url: %w", err)
		}
		return setup.BaseURL(flag), nil
	}
	c, err := a.loadConfig()
	if err != nil {
		return "", err
	}
	return "http://" + clientAddr(c.Listen), nil
}

// clientAddr is the address a client on this machine dials for a listen
// address: a wildcard host (0.0.0.0, ::, empty) becomes the loopback.
func clientAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// setupCodexOptions are setup codex's flags.
type setupCodexOptions struct {
	printOnly, chatgpt, apiKey, force bool
	codexHome, envKey, u              string
}

func (o *setupCodexOptions) flags(f *pflag.FlagSet) {
	f.BoolVar(&o.printOnly, "print", false, "print the TOML to add instead of writing config.toml")
	f.BoolVar(&o.chatgpt, "chatgpt", false, "Codex is signed in with a ChatGPT plan: send that sign-in through the gateway's /backend-api/codex")
	f.BoolVar(&o.apiKey, "api-key", false, "send an API key (--env-key), also on a config.toml set up with --chatgpt, which plain setup codex keeps")
	f.BoolVar(&o.force, "force", false, "with --chatgpt: write it although auth.json holds no ChatGPT sign-in")
	f.StringVar(&o.codexHome, "codex-home", "", "Codex's directory (default $CODEX_HOME or ~/.codex)")
	f.StringVar(&o.envKey, "env-key", setup.DefaultEnvKey, "environment variable whose value Codex sends as the Bearer key")
	f.StringVar(&o.u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
}

func (a *App) setupCodexCmd() *cobra.Command {
	var o setupCodexOptions
	cmd := &cobra.Command{
		Use:   "codex",
		Short: "Add a spillway model provider to Codex CLI's config.toml",
		Long: `codex merges into $CODEX_HOME/config.toml (default ~/.codex/config.toml) the
root key model_provider = "spillway" and a [model_providers.spillway] table
whose base_url is the gateway's /v1. Everything else in the file is kept as it
is; the old file is first copied to config.toml.spillway-backup-<time>.
Running it again changes nothing. --print only prints the text to add.

Signed in with a ChatGPT plan, use --chatgpt: the provider's base_url is the
gateway's /backend-api/codex and Codex sends its own sign-in there
(requires_openai_auth = true); the gateway passes it to chatgpt.com untouched
and falls back between the plan's models inside one request. --chatgpt
refuses when $CODEX_HOME/auth.json holds no ChatGPT sign-in (run codex login
first), unless --force.

The sign-in is never switched silently: on a config.toml set up with
--chatgpt, plain setup codex keeps that setup (and says so); --api-key
replaces it with the API-key provider.`,
		Example: `  spillway setup codex
  spillway setup codex --chatgpt
  spillway setup codex --api-key
  spillway setup codex --print
  spillway setup codex --codex-home ~/work/.codex --env-key SPILLWAY_OPENAI_KEY`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.setupCodex(&o) },
	}
	o.flags(cmd.Flags())
	return cmd
}

func (a *App) setupCodex(o *setupCodexOptions) error {
	if err := setup.CheckEnvKey(o.envKey); err != nil {
		return fail(ExitUsage, "--env-key: %w", err)
	}
	if o.envKey == "" {
		o.envKey = setup.DefaultEnvKey
	}
	if o.chatgpt && o.apiKey {
		return fail(ExitUsage, "--chatgpt and --api-key: give one (--chatgpt: Codex sends its ChatGPT sign-in; --api-key: it sends $%s)", o.envKey)
	}
	if o.force && !o.chatgpt {
		return fail(ExitUsage, "--force goes with --chatgpt (it writes the ChatGPT setup although auth.json holds no ChatGPT sign-in)")
	}
	base, err := a.gatewayURL(o.u)
	if err != nil {
		return err
	}
	if o.printOnly {
		block := setup.CodexBlock(base, o.envKey)
		if o.chatgpt {
			block = setup.CodexChatGPTBlock(base)
		}
		fmt.Fprintln(a.Stderr, "# model_provider must come before the first [table] of config.toml; without --print, setup merges it for you.")
		_, err := fmt.Fprint(a.Stdout, block)
		return err
	}
	if o.codexHome == "" {
		o.codexHome = agentfiles.CodexHome(a.Getenv)
	}
	if o.codexHome == "" {
		return fail(ExitUsage, "neither CODEX_HOME nor HOME is set; give --codex-home DIR")
	}
	if err := a.codexSignIn(o); err != nil {
		return err
	}
	return a.writeCodexSetup(o, base)
}

// codexSignIn settles which sign-in the setup sends (a config.toml set up
// for ChatGPT keeps it), refuses --chatgpt without a ChatGPT sign-in
// (unless --force), and notes what Codex needs besides.
func (a *App) codexSignIn(o *setupCodexOptions) error {
	configTOML, auth := filepath.Join(o.codexHome, "config.toml"), filepath.Join(o.codexHome, "auth.json")
	signIn := agentfiles.CodexSignIn(o.codexHome)
	kept := !o.chatgpt && !o.apiKey && setup.CodexSetUp(o.codexHome) == "chatgpt"
	switch {
	case kept:
		o.chatgpt = true
		fmt.Fprintf(a.Stdout, "%s is set up for Codex's ChatGPT sign-in (requires_openai_auth = true): kept. To send an API key ($%s) instead: spillway setup codex --api-key\n", configTOML, o.envKey)
	case o.chatgpt && signIn != "chatgpt" && !o.force:
		why := auth + " does not hold a ChatGPT sign-in"
		if signIn == "apikey" {
			why = auth + " holds an API key, not a ChatGPT sign-in"
		} else if _, err := os.Stat(auth); errors.Is(err, os.ErrNotExist) {
			why = "there is no " + auth + " (Codex is not signed in)"
		}
		return fail(ExitFail, "--chatgpt: %s, so Codex would have no sign-in to send through the gateway; sign in with ChatGPT first (codex login), or give --force to write it anyway (with an API key: spillway setup codex --api-key)", why)
	}
	switch {
	case o.chatgpt && signIn != "chatgpt":
		fmt.Fprintf(a.Stderr, "note: %s does not hold a ChatGPT sign-in; run codex login first (with an API key, run: spillway setup codex --api-key)\n", auth)
	case !o.chatgpt && signIn == "chatgpt":
		fmt.Fprintf(a.Stderr, "note: Codex is signed in with ChatGPT (%s): this provider sends $%s, not that sign-in; to use your plan through spillway, run: spillway setup codex --chatgpt\n", auth, o.envKey)
	case !o.chatgpt && a.Getenv(o.envKey) == "":
		fmt.Fprintf(a.Stderr, "note: %s is not set here; Codex sends its value as the Bearer key (see the env_key comment in %s)\n", o.envKey, configTOML)
	}
	return nil
}

// writeCodexSetup merges the provider into config.toml and says what it
// did and how to undo it.
func (a *App) writeCodexSetup(o *setupCodexOptions, base string) error {
	_, statErr := os.Stat(filepath.Join(o.codexHome, "config.toml"))
	block := setup.CodexBlock(base, o.envKey)
	write := func() (string, string, error) { return setup.WriteCodex(o.codexHome, base, o.envKey, time.Now()) }
	at := base + "/v1"
	if o.chatgpt {
		block = setup.CodexChatGPTBlock(base)
		write = func() (string, string, error) { return setup.WriteCodexChatGPT(o.codexHome, base, time.Now()) }
		at = base + "/backend-api/codex"
	}
	path, backup, err := write()
	if err != nil {
		var pe *setup.ParseError
		if errors.As(err, &pe) && pe.Context != "" {
			fmt.Fprintln(a.Stderr, strings.TrimRight(pe.Context, "\n"))
		}
		return fail(ExitFail, "%w", err)
	}
	a.reportMerged(merged{path: path, backup: backup, existed: statErr == nil, agent: "Codex", at: at, text: block})
	fmt.Fprintln(a.Stdout, "start the gateway with: spillway serve")
	return nil
}

func (a *App) setupClaudeCmd() *cobra.Command {
	var shell, u string
	var bedrock, vertex bool
	cmd := &cobra.Command{
		Use:   "claude",
		Short: "Print the environment that points Claude Code at spillway",
		Long: `claude prints ANTHROPIC_BASE_URL for the gateway in the syntax of a shell
(default: the one $SHELL names, else sh). Claude Code keeps its own
ANTHROPIC_API_KEY or login; spillway passes it through.

--bedrock and --vertex print the environment of Claude Code's Amazon Bedrock
or Google Vertex AI mode instead, pointed at the gateway's /bedrock or
/vertex/v1: the gateway answers those calls from its configured models and
chains, and nothing of AWS or Google Cloud is used. The region (AWS_REGION,
default us-east-1; CLOUD_ML_REGION, default us-east5) and the project
(ANTHROPIC_VERTEX_PROJECT_ID, default spillway) are kept from the environment.
Claude Code sends no cloud credential; on a gateway with gateway.keys it sends
the gateway key, which setup takes from $SPILLWAY_KEY (never from a flag,
which the shell's history would keep). Without a vendor key, such a client is
answered only by deployments sent with spillway's own credentials (auth: key,
Bedrock, Vertex AI): setup says so on stderr when the configuration has none.`,
		Example: `  eval "$(spillway setup claude)"
  spillway setup claude --shell fish | source
  spillway setup claude --shell powershell | Invoke-Expression
  eval "$(spillway setup claude --bedrock)"
  eval "$(spillway setup claude --vertex)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bedrock && vertex {
				return fail(ExitUsage, "--bedrock and --vertex: give one (Claude Code runs in one mode at a time)")
			}
			sh, base, err := a.shellAndURL(shell, u)
			if err != nil {
				return err
			}
			if !bedrock && !vertex {
				_, err = fmt.Fprint(a.Stdout, setup.ClaudeEnv(base, sh))
				return err
			}
			c := setup.Cloud{Key: a.Getenv("SPILLWAY_KEY"), Project: a.Getenv("ANTHROPIC_VERTEX_PROJECT_ID")}
			mode, cloud := "--bedrock", "Bedrock"
			if vertex {
				mode, cloud = "--vertex", "Vertex AI"
			}
			if u == "" {
				// the configuration read for the URL: is a key needed, and
				// can a keyless client be answered at all
				if cfg, err := a.loadConfig(); err == nil {
					if c.Key == "" && len(cfg.Gateway.Keys) > 0 {
						return fail(ExitUsage, "this gateway has gateway.keys, so Claude Code must send one: put your gateway key in SPILLWAY_KEY and run spillway setup claude %s again (the key is printed for your shell, never kept)", mode)
					}
					if !ownClaudeStep(cfg) {
						fmt.Fprintf(a.Stderr, "note: no Claude model of this configuration has a deployment whose provider has credentials of its own (an api_key, or a Bedrock or Vertex AI provider); Claude Code in its %s mode sends no Anthropic key, so the gateway could answer none of its requests: give the anthropic provider an api_key (see docs/clouds.md)\n", cloud)
					}
				}
			}
			env := ""
			if bedrock {
				c.Region = a.Getenv("AWS_REGION")
				env = setup.ClaudeBedrockEnv(base, sh, c)
			} else {
				c.Region = a.Getenv("CLOUD_ML_REGION")
				env = setup.ClaudeVertexEnv(base, sh, c)
			}
			_, err = fmt.Fprint(a.Stdout, env)
			return err
		},
	}
	shellFlags(cmd, &shell, &u)
	cmd.Flags().BoolVar(&bedrock, "bedrock", false, "Claude Code's Amazon Bedrock mode (CLAUDE_CODE_USE_BEDROCK), at the gateway's /bedrock")
	cmd.Flags().BoolVar(&vertex, "vertex", false, "Claude Code's Google Vertex AI mode (CLAUDE_CODE_USE_VERTEX), at the gateway's /vertex/v1")
	return cmd
}

// ownClaudeStep reports whether the configuration has a deployment a
// keyless client (Claude Code in a cloud mode) can be answered from: one
// whose provider has credentials of its own (an api_key, whatever its
// auth, or a cloud's), of a model of Anthropic's format or of another
// vendor's model a chain crosses to. It does not follow the chains: it is
// the note's check, not the driver's.
func ownClaudeStep(cfg *config.Config) bool {
	cross := cfg.CrossVendor()
	for name := range cfg.Models {
		// a model of the format the cloud routes take (Anthropic's)
		claude := wire.Format(cfg.ModelType(name)) == wire.CloudEndpoints[0].Format
		if !claude && !cross {
			continue
		}
		for _, d := range cfg.Deployments(name) {
			p := cfg.Providers[d.Provider]
			if p.OwnCredentials() {
				return true
			}
		}
	}
	return false
}

func (a *App) setupGeminiCmd() *cobra.Command {
	var shell, u, home string
	var printOnly, google bool
	cmd := &cobra.Command{
		Use:   "gemini",
		Short: "Point Gemini CLI at spillway: its settings, and the environment to export",
		Long: `gemini merges into Gemini CLI's settings.json ($GEMINI_CLI_HOME/.gemini or
~/.gemini) API-key auth (the only kind a base URL applies to) and one attempt
per request (the gateway has walked the chain already), keeping every other
setting and the old file as settings.json.spillway-backup-<time>; then it
prints GOOGLE_GEMINI_BASE_URL for the gateway in the syntax of a shell
(default: the one $SHELL names, else sh). The file is edited in place (its
comments and indentation stay) and read back as Gemini CLI reads it, which
takes comments but not trailing commas; a file Gemini CLI cannot read is
named with its line and column, and left as it is. --print changes no file and prints
the settings to add too. Gemini CLI keeps sending its GEMINI_API_KEY;
spillway passes it through.

Signed in with Google, use --google: the settings get only the one attempt
(your sign-in stays as it is) and it prints CODE_ASSIST_ENDPOINT for the
gateway, which serves the Code Assist API and passes the sign-in to Google's
untouched.`,
		Example: `  eval "$(spillway setup gemini)"
  eval "$(spillway setup gemini --google)"
  spillway setup gemini --print
  spillway setup gemini --shell fish | source`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sh, base, err := a.shellAndURL(shell, u)
			if err != nil {
				return err
			}
			settings, env, write, what := setup.GeminiSettings, setup.GeminiEnv(base, sh), setup.WriteGemini, "API-key auth, one attempt per request"
			if google {
				settings, env, write, what = setup.GeminiGoogleSettings, setup.GeminiGoogleEnv(base, sh), setup.WriteGeminiGoogle, "one attempt per request (your Google sign-in as it is)"
			}
			if printOnly {
				b, _ := json.MarshalIndent(settings, "", "  ")
				fmt.Fprintf(a.Stdout, "# merge into ~/.gemini/settings.json:\n# %s\n", strings.ReplaceAll(string(b), "\n", "\n# "))
				_, err := fmt.Fprint(a.Stdout, env)
				return err
			}
			if home == "" {
				home = agentfiles.GeminiHome(a.Getenv)
			}
			path, backup, err := write(home, time.Now())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			// the file's news goes to stderr: stdout is the environment, for eval
			switch {
			case backup != "":
				fmt.Fprintf(a.Stderr, "updated %s: %s (old file kept as %s)\n", path, what, backup)
			default:
				fmt.Fprintf(a.Stderr, "%s: %s\n", path, what)
			}
			_, err = fmt.Fprint(a.Stdout, env)
			return err
		},
	}
	shellFlags(cmd, &shell, &u)
	cmd.Flags().StringVar(&home, "gemini-home", "", "Gemini CLI's directory (default $GEMINI_CLI_HOME/.gemini or ~/.gemini)")
	cmd.Flags().BoolVar(&printOnly, "print", false, "change no file: print the settings to add and the environment")
	cmd.Flags().BoolVar(&google, "google", false, "Gemini CLI is signed in with Google: send its Code Assist requests through the gateway")
	return cmd
}

// shellFlags adds --shell and --url, which the commands that print an
// environment share.
func shellFlags(cmd *cobra.Command, shell, u *string) {
	cmd.Flags().StringVar(shell, "shell", "", "syntax to print: "+strings.Join(setup.Shells, ", ")+" (default from $SHELL, else sh)")
	cmd.Flags().StringVar(u, "url", "", "gateway URL (default http://<listen> from the spillway configuration)")
}

// shellAndURL is the shell to print for (--shell, else the one $SHELL
// names, else sh) and the gateway's URL (--url, else the configuration's).
func (a *App) shellAndURL(shell, u string) (string, string, error) {
	sh := "sh"
	if shell != "" {
		var ok bool
		if sh, ok = setup.Shell(shell); !ok {
			return "", "", fail(ExitUsage, "--shell %q: use one of %s", shell, strings.Join(setup.Shells, ", "))
		}
	} else if s, ok := setup.Shell(a.Getenv("SHELL")); ok {
		sh = s
	}
	base, err := a.gatewayURL(u)
	return sh, base, err
}

// shArg quotes s for a POSIX shell when it needs it.
func shArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (a *App) setupServiceCmd() *cobra.Command {
	var goos, listen, binary string
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run the gateway as a user service: a systemd user unit (Linux) or a launchd agent (macOS)",
		Long: `service writes ~/.config/systemd/user/spillway.service (Linux) or
~/Library/LaunchAgents/dev.spillway.serve.plist (macOS) that runs spillway serve
with this configuration (an absolute --config, when one is in use), restarts it
when it fails, and prints the commands that enable it. A changed unit replaces
the old one, which is kept beside it as a backup. Keys are never written into
it: the systemd unit reads them from ~/.config/spillway/env when that exists;
with auth: passthrough (the default) the agents send their own. --print writes
nothing.`,
		Example: `  spillway setup service
  spillway setup service --listen 127.0.0.1:9000 --print`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("os") && goos != "linux" && goos != "darwin" {
				return fail(ExitUsage, "--os %q: give linux (a systemd user unit) or darwin (a launchd agent); on another system, run spillway serve under your own supervisor", goos)
			}
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return fail(ExitFail, "cannot tell where spillway is: %v (give --binary)", err)
				}
				if exe, err = filepath.EvalSymlinks(exe); err != nil {
					return fail(ExitFail, "%v", err)
				}
				binary = exe
			}
			var args []string
			cfgPath, err := config.Find(a.configPath, a.Getenv)
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			if cfgPath != "" {
				if cfgPath, err = filepath.Abs(cfgPath); err != nil {
					return fail(ExitFail, "%v", err)
				}
				args = append(args, "--config", cfgPath)
			}
			if listen != "" {
				args = append(args, "--listen", listen)
			}
			svc := setup.Service{Binary: binary, Args: args, Home: a.Getenv("HOME")}
			path, text, enable, err := svc.For(goos)
			if err != nil {
				return fail(ExitFail, "%v", err)
			}
			if printOnly {
				fmt.Fprintf(a.Stdout, "# %s\n%s", path, text)
				return nil
			}
			path, backup, err := setup.WriteService(path, text, time.Now())
			if err != nil {
				return fail(ExitFail, "%v", err)
			}
			fmt.Fprintf(a.Stdout, "wrote %s", path)
			if backup != "" {
				fmt.Fprintf(a.Stdout, " (the old one kept as %s)", backup)
			}
			fmt.Fprintf(a.Stdout, "\nenable it:\n")
			for _, c := range enable {
				fmt.Fprintf(a.Stdout, "  %s\n", c)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&goos, "os", runtime.GOOS, "linux (systemd) or darwin (launchd)")
	f.StringVar(&listen, "listen", "", "the address the service listens on (default: the configuration's)")
	f.StringVar(&binary, "binary", "", "the spillway binary the service runs (default: this one)")
	f.BoolVar(&printOnly, "print", false, "print the unit; write nothing")
	return cmd
}

// listAgents is setup with no agent: each agent, where it is on PATH, and
// whether it is set up for spillway.
func (a *App) listAgents() error {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSETUP\tON PATH\tSET UP FOR SPILLWAY")
	for _, ag := range setup.Agents() {
		path := lookPath(ag.Command, a.Getenv("PATH"))
		if path == "" {
			path = "not found"
		}
		state, where := ag.State(a.Getenv)
		if state == "" {
			state = "no"
		} else if where != "" {
			state += " (" + where + ")"
		}
		fmt.Fprintf(tw, "%s\tspillway setup %s\t%s\t%s\n", ag.Title, ag.Name, path, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(a.Stdout, "\nspillway setup <agent> sets one up (--print shows what it would write, changing nothing).")
	return err
}

// lookPath is exec.LookPath over the directories of path (the PATH of the
// environment setup runs in), "" when command is in none of them.
func lookPath(command, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// merged is what an agent's setup did to its file, for reportMerged.
type merged struct {
	path, backup string
	existed      bool   // the file was there before
	agent, at    string // "Codex"; the gateway's URL it now uses
	what         string // what it uses there, said after the URL ("provider openai-compatible"), or ""
	text         string // what was merged, shown after a change, or ""
}

// reportMerged says what an agent's setup did to its file, and how to undo
// it: the backup copied back over it, or the new file removed. Every
// agent's setup reports the same way.
func (a *App) reportMerged(m merged) {
	uses := "now uses spillway at " + m.at
	if m.what != "" {
		uses += " (" + m.what + ")"
	}
	shown := "\n"
	if m.text != "" {
		shown = ":\n\n" + m.text + "\n"
	}
	switch {
	case m.backup != "":
		fmt.Fprintf(a.Stdout, "updated %s: %s %s%s", m.path, m.agent, uses, shown)
		fmt.Fprintf(a.Stdout, "old file kept as %s\nundo: cp %s %s\n", m.backup, shArg(m.backup), shArg(m.path))
	case m.existed:
		fmt.Fprintf(a.Stdout, "%s already routes %s through spillway at %s; nothing changed\n", m.path, m.agent, m.at)
	default:
		fmt.Fprintf(a.Stdout, "wrote %s: %s %s%s", m.path, m.agent, uses, shown)
		fmt.Fprintf(a.Stdout, "there was no %s before; undo: rm %s\n", filepath.Base(m.path), shArg(m.path))
	}
}
