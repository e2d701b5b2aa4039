package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/words"
)

func (a *App) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check and show the configuration",
	}
	var quiet bool
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a configuration file and print the effective configuration (secrets masked)",
		Example: `  spillway config check
  spillway config check ./spillway.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				a.configPath = args[0]
			}
			c, err := a.loadConfig()
			if err != nil {
				var ee *exitError
				var ce *config.Error
				if errors.As(err, &ee) && errors.As(ee.err, &ce) {
					return a.problems(ce)
				}
				return err
			}
			for _, w := range c.Warnings {
				fmt.Fprintln(a.Stderr, "warning:", w)
			}
			src := "built-in defaults (no configuration file)"
			if c.Source != "" {
				src = c.Source + " over the built-in defaults"
			}
			if quiet {
				fmt.Fprintf(a.Stdout, "ok: %s\n", src)
				return nil
			}
			out, err := c.Effective()
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			fmt.Fprintf(a.Stdout, "# ok: %s; %s, %s; secrets masked\n", src, words.Count(len(c.Models), "model"), words.Count(len(c.Chains), "chain"))
			for _, line := range append(chainLines(c), deploymentLines(c)...) {
				fmt.Fprintln(a.Stdout, line)
			}
			_, err = a.Stdout.Write(out)
			return err
		},
	}
	check.Flags().BoolVarP(&quiet, "quiet", "q", false, "only say whether the file is valid")
	hash := &cobra.Command{
		Use:   "hash-key",
		Short: "Print a gateway key's sha256: form for gateway.keys (reads the key from standard input)",
		Long: `hash-key reads a gateway key from standard input and prints the sha256:HEX form
that gateway.keys takes, so that the configuration file holds no key.`,
		Example: `  openssl rand -hex 24 | tee alice.key | spillway config hash-key`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := io.ReadAll(io.LimitReader(a.Stdin, 4096))
			if err != nil {
				return fail(ExitFail, "%v", err)
			}
			key := strings.TrimSpace(string(b))
			if len(key) < 16 {
				return fail(ExitUsage, "the key on standard input is %d characters; use 16 or more (openssl rand -hex 24)", len(key))
			}
			fmt.Fprintln(a.Stdout, "sha256:"+config.KeyHash(key))
			return nil
		},
	}
	cmd.AddCommand(check, hash)
	return cmd
}

func (a *App) initCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [PATH]",
		Short: "Write a commented starter configuration file",
		Long: `init writes a commented starter file (default: $SPILLWAY_CONFIG or
~/.config/spillway/spillway.yaml). It refuses to overwrite an existing file
unless --force is given; the old file is then kept as PATH.bak.`,
		Example: `  spillway init
  spillway init ./spillway.yaml --force`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := config.DefaultPath(a.Getenv)
			if a.configPath != "" {
				path = a.configPath
			}
			if len(args) == 1 {
				path = args[0]
			}
			if _, err := os.Stat(path); err == nil {
				if !force {
					return fail(ExitFail, "%s already exists; use --force to overwrite it (the old file is kept as %s.bak)", path, path)
				}
				old, err := os.ReadFile(path)
				if err != nil {
					return fail(ExitFail, "%w", err)
				}
				if err := os.WriteFile(path+".bak", old, 0o600); err != nil {
					return fail(ExitFail, "keeping a backup: %w", err)
				}
				fmt.Fprintf(a.Stderr, "kept the old file as %s.bak\n", path)
			} else if !errors.Is(err, os.ErrNotExist) {
				return fail(ExitFail, "%w", err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return fail(ExitFail, "%w", err)
			}
			if err := os.WriteFile(path, config.Starter, 0o600); err != nil {
				return fail(ExitFail, "%w", err)
			}
			fmt.Fprintf(a.Stdout, "wrote %s\ncheck it with: spillway config check %s\n", path, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file (keeping it as .bak)")
	return cmd
}

// chainLines say, for each model, the walk a request for it takes: "#
// gpt-6-astra: gpt-6-astra > gpt-6.1-sol > gpt-6-luna (chain codex)", then
// its chain's overflow, the models at or below its tier: " then overflow:
// claude-sonnet-5-5 [anthropic, translated] > ... (chain claude)". A step to
// a model of another wire format than the walk's first (a cross-vendor step:
// translated, with its provider's own api_key) is marked with that format;
// when there is one, a note says where it is skipped.
func chainLines(c *config.Config) []string {
	lines := []string{"# where a request for each model goes, in order (then, with every one full, again after a wait):"}
	cross := false
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		chain, walk := c.ChainFor(name)
		which := "in no chain"
		if chain != "" {
			which = "chain " + chain
		}
		format := c.ModelType(name)
		steps := func(models []string) string {
			out := make([]string, len(models))
			for i, m := range models {
				out[i] = m
				if t := c.ModelType(m); t != "" && format != "" && t != format {
					out[i] += " [" + string(t) + ", translated]"
					cross = true
				}
			}
			return strings.Join(out, " > ")
		}
		line := fmt.Sprintf("#   %s: %s (%s)", name, steps(walk), which)
		if over := c.ChainRules[chain].Overflow; chain != "" && over != "" {
			if models := overflowWalk(c, name, c.Chains[over]); len(models) > 0 {
				line += fmt.Sprintf(" then overflow: %s (chain %s)", steps(models), over)
			}
		}
		lines = append(lines, line)
	}
	if cross {
		lines = append(lines, "# note: [format, translated] is a cross-vendor step, sent with its provider's own api_key; the gateway and prompt steps translate it, spillway exec and queue command steps (an agent's -m) skip it")
	}
	return lines
}

// overflowWalk are the models of an overflow chain a request for model
// walks: those at or below its tier (never a pricier one).
func overflowWalk(c *config.Config, model string, chain []string) []string {
	asked := c.Models[model].Tier.Rank()
	var out []string
	for _, m := range chain {
		if mm, ok := c.Models[m]; ok && (asked == 0 || mm.Tier.Rank() <= asked) {
			out = append(out, m)
		}
	}
	return out
}

// deploymentLines say, for each model served by several deployments or by
// a cloud, its pools: where a request for it goes, in the order it spills,
// each with its provider (a cloud's with the cloud and region) and the id
// it goes upstream as: "# gpt-6-astra: us (openai, weight 2), eu
// (openai-eu as gpt-6-astra-eu, weight 1)", "# claude-sonnet-5-5: east
// (bedrock-east: bedrock us-east-1 as anthropic.claude-…, weight 1)".
func deploymentLines(c *config.Config) []string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		deps := c.Deployments(name)
		if len(c.Models[name].Deployments) == 0 && (len(deps) == 0 || c.Providers[deps[0].Provider].Cloud() == "") {
			continue
		}
		var ds []string
		for _, d := range deps {
			where := d.Provider
			if p := c.Providers[d.Provider]; p.Cloud() != "" {
				where += ": " + p.Cloud() + " " + p.Region
			}
			if d.Upstream != name {
				where += " as " + d.Upstream
			}
			pool := fmt.Sprintf("(%s, weight %d)", where, d.Weight)
			if d.Name != "" {
				pool = d.Name + " " + pool
			}
			ds = append(ds, pool)
		}
		lines = append(lines, fmt.Sprintf("# %s: %s", name, strings.Join(ds, ", ")))
	}
	if len(lines) > 0 {
		lines = append([]string{"# each model's pools (deployments; healthy ones share traffic by weight; a full one spills to the next):"}, lines...)
	}
	return lines
}

// problems says every problem of a file, one a line in the order of its
// lines, then how many (exit 1).
func (a *App) problems(ce *config.Error) error {
	fmt.Fprintln(a.Stderr, ce.Error())
	return fail(ExitFail, "%s in %s", words.Count(len(ce.Problems), "problem"), ce.Problems[0].File)
}
