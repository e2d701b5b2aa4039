package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// simOptions are sim's flags.
type simOptions struct {
	listen, scenario, clock, start string
	regions                        []string
	seed                           int64
	tokenRate                      float64
	maxBody                        int64
	// the clouds' test credentials
	awsCredentials, bedrockAPIKey, gcpServiceAccount string
	tokenLifetime                                    time.Duration
}

func (o *simOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.listen, "listen", "127.0.0.1:8790", "address to listen on")
	f.StringVar(&o.scenario, "scenario", "calm", "built-in scenario name or YAML file")
	f.Int64Var(&o.seed, "seed", 1, "seed of the load noise and random faults")
	f.StringVar(&o.clock, "clock", "real", "real, fast:X (X simulated seconds per real second), or step:D (D simulated with each request: the same seed and requests meet the same world)")
	f.StringVar(&o.start, "start", "", "simulated start time (RFC 3339); default the scenario's, else now")
	f.Float64Var(&o.tokenRate, "token-rate", -1, "tokens per second streamed (0: no delay); default the scenario's")
	f.Int64Var(&o.maxBody, "max-body", sim.DefaultMaxBody, "largest request body in bytes; larger gets 413")
	f.StringSliceVar(&o.regions, "regions", nil, "serve every model again under /REGION/ for each, with pools of its own (deployments, cloud regions)")
	f.StringVar(&o.awsCredentials, "aws-credentials", "", "test AWS credentials ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]: Bedrock requests must be SigV4-signed with them (default: any request)")
	f.StringVar(&o.bedrockAPIKey, "bedrock-api-key", "", "a test Bedrock API key: Bedrock requests may carry it as Authorization: Bearer (default: any request)")
	f.StringVar(&o.gcpServiceAccount, "gcp-service-account", "", "write a Google service-account JSON (a fresh key, token_uri this simulator's /token) to FILE: Vertex AI requests then need a token /token granted for it (default: any bearer)")
	f.DurationVar(&o.tokenLifetime, "token-lifetime", time.Hour, "how long a granted access token lasts, on the simulator's clock")
}

// clouds are the cloud credentials o's flags configure.
func (o *simOptions) clouds() (sim.CloudAuth, error) {
	c := sim.CloudAuth{BedrockAPIKey: o.bedrockAPIKey, GoogleServiceAccount: o.gcpServiceAccount != "", TokenLifetime: o.tokenLifetime}
	if o.tokenLifetime <= 0 {
		return c, fail(ExitUsage, "--token-lifetime %s: a duration more than 0, e.g. 1h or 90s", o.tokenLifetime)
	}
	if o.awsCredentials != "" {
		f := strings.SplitN(o.awsCredentials, ":", 3)
		if len(f) < 2 || f[0] == "" || f[1] == "" {
			// never the value: it holds a secret
			return c, fail(ExitUsage, "--aws-credentials: write ACCESS_KEY_ID:SECRET_ACCESS_KEY, or ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN")
		}
		c.AWS = &sim.AWSCredentials{AccessKeyID: f[0], SecretAccessKey: f[1]}
		if len(f) == 3 {
			c.AWS.SessionToken = f[2]
		}
	}
	return c, nil
}

func (a *App) simCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a capacity-limited fake provider (OpenAI, Anthropic, Gemini wire formats)",
		Long: `sim runs a simulated provider that the real Codex CLI, Claude Code and the official
SDKs accept, and that runs out of capacity the way real pools do. It serves the
configured models (the built-in catalog by default) on:

  OpenAI:    POST /v1/chat/completions, POST /v1/responses, POST /v1/embeddings, GET /v1/models
  Anthropic: POST /v1/messages
  Gemini:    POST /v1beta/models/MODEL:generateContent, :streamGenerateContent (?alt=sse)
  Bedrock:   POST /model/MODEL_ID/invoke, /model/MODEL_ID/invoke-with-response-stream
  Vertex AI: POST /v1/projects/P/locations/R/publishers/anthropic/models/M:rawPredict,
             :streamRawPredict, .../publishers/google/models/M:generateContent,
             :streamGenerateContent; POST /token (the service account's grant)
  Control:   POST|GET|DELETE /_sim/faults, GET|DELETE /_sim/stats, GET /_sim/scenario

With --regions eu,us every model is served again under /eu/ and /us/ (OpenAI
base URL http://ADDR/eu/v1, the control API at /eu/_sim/faults), with pools,
faults and statistics of its own: one model as several deployments.

The clouds serve every Anthropic model (Bedrock, Vertex AI) and every Gemini
model (Vertex AI) from pools of their own, named bedrock/MODEL and
vertex/MODEL in faults, stats and scenarios. A Bedrock region is a region
prefix (base URL http://ADDR/us-east-1); a Vertex AI request's
locations/R is served by region R when the simulator runs one. A
scenario's regions: map changes one region's pools only:

  regions:
    us-east-1:
      models:
        bedrock/claude-sonnet-5-5: {pool: 1, peak_load: 1, quiet_load: 1}

Scenarios: ` + strings.Join(sim.BuiltinNames, ", ") + `, or a YAML file.`,
		Example: `  spillway sim --scenario peak
  spillway sim --scenario peak --clock fast:60 --seed 7
  spillway sim --regions eu,us
  spillway sim --regions us-east-1,us-west-2 --aws-credentials AKIDTEST:secret --gcp-service-account sa.json
  curl -s -X POST localhost:8790/_sim/faults -d '{"model":"gpt-6-astra","fault":"capacity","count":-1}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSim(cmd.Context(), &o) },
	}
	o.flags(cmd.Flags())
	return cmd
}

func (a *App) runSim(ctx context.Context, o *simOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	scn, err := a.loadScenario(o.scenario)
	if err != nil {
		return err
	}
	var startT time.Time
	if o.start == "" {
		o.start = scn.Start
	}
	if o.start != "" {
		if startT, err = time.Parse(time.RFC3339, o.start); err != nil {
			return fail(ExitUsage, "--start %q: write an RFC 3339 time such as 2026-11-25T11:00:00Z", o.start)
		}
	}
	clk, err := sim.ParseClock(o.clock, startT)
	if err != nil {
		return fail(ExitUsage, "%w", err)
	}
	clouds, err := o.clouds()
	if err != nil {
		return err
	}
	srv, err := sim.New(sim.Options{Scenario: scn, Config: cfg, Seed: o.seed, Clock: clk, TokenRate: o.tokenRate, MaxBody: o.maxBody, Regions: o.regions, Clouds: clouds})
	if err != nil {
		return fail(ExitUsage, "%w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var writeErr error
	err = srv.ListenAndServe(ctx, o.listen, func(addr net.Addr) {
		fmt.Fprintf(a.Stderr, "spillway sim: scenario %s, clock %s at %s; listening on http://%s\n",
			scn.Name, clockName(o.clock), clk.Now().Format(time.RFC3339), addr)
		fmt.Fprintf(a.Stderr, "  OpenAI base URL http://%s/v1, Anthropic and Gemini base URL http://%s; any key works unless the scenario names it\n", addr, addr)
		for _, r := range o.regions {
			fmt.Fprintf(a.Stderr, "  region %s: OpenAI base URL http://%s/%s/v1, Anthropic and Gemini base URL http://%s/%s, pools of its own\n", r, addr, r, addr, r)
		}
		fmt.Fprintf(a.Stderr, "  Bedrock base URL http://%s (or /REGION), Vertex AI base URL http://%s; %s\n", addr, addr, cloudAuthNote(o))
		if o.gcpServiceAccount != "" {
			writeErr = writeServiceAccount(srv, o.gcpServiceAccount, "http://"+addr.String()+"/token")
			if writeErr != nil {
				cancel()
				return
			}
			fmt.Fprintf(a.Stderr, "  Google service account written to %s (token_uri http://%s/token)\n", o.gcpServiceAccount, addr)
		}
	})
	if writeErr != nil {
		return fail(ExitFail, "--gcp-service-account: %w", writeErr)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fail(ExitFail, "%s is in use (another spillway sim, or another program): choose another address with --listen 127.0.0.1:PORT", o.listen)
	}
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	return nil
}

// cloudAuthNote says which cloud credentials the simulator checks (never
// a secret).
func cloudAuthNote(o *simOptions) string {
	var parts []string
	if o.awsCredentials != "" {
		parts = append(parts, "Bedrock requests SigV4-signed with the --aws-credentials")
	}
	if o.bedrockAPIKey != "" {
		parts = append(parts, "Bedrock API key accepted")
	}
	if o.gcpServiceAccount != "" {
		parts = append(parts, "Vertex AI tokens from /token")
	}
	if len(parts) == 0 {
		return "any cloud credentials work"
	}
	return strings.Join(parts, ", ")
}

// writeServiceAccount writes srv's service-account JSON, whose token_uri
// is tokenURL, to path, readable by its user only (it holds a private key).
func writeServiceAccount(srv *sim.Server, path, tokenURL string) error {
	b, err := srv.ServiceAccountJSON(tokenURL)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func clockName(c string) string {
	if c == "" {
		return "real"
	}
	return c
}

// loadScenario is sim.LoadScenario for a command's --scenario: a file's
// mistakes are said as config check says them (a.problems, exit 1), a file
// that cannot be read is 1, and a name that is neither built in nor a file
// is a usage error (2).
func (a *App) loadScenario(name string) (*sim.Scenario, error) {
	scn, err := sim.LoadScenario(name)
	var ce *config.Error
	switch {
	case err == nil:
		return scn, nil
	case errors.As(err, &ce):
		return nil, a.problems(ce)
	case errors.Is(err, sim.ErrUnknownScenario):
		return nil, fail(ExitUsage, "%w", err)
	}
	return nil, fail(ExitFail, "%w", err)
}
