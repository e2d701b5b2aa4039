package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
)

// maxExplainInput bounds what explain reads from stdin.
const maxExplainInput = 4 << 20

func (a *App) explainCmd() *cobra.Command {
	var (
		asJSON   bool
		status   int
		headers  []string
		provider string
	)
	cmd := &cobra.Command{
		Use:   "explain [TEXT | -]",
		Short: "Tell what kind of failure an error is, and what to do",
		Long: `explain classifies an error: a line printed by Codex CLI, Claude Code or Gemini
CLI, a response body (with --status and --header), a whole HTTP answer with its
status line and headers (curl -i), an SSE error event, or a log line. With no
TEXT, or with -, it reads standard input. It knows the clouds' own errors too:
Amazon Bedrock's exceptions (x-amzn-errortype, or the error events of a
stream), Vertex AI's 429s and Azure OpenAI's wordings and headers.

Classes: capacity, rate_limit, quota, auth, model_not_found, context_length,
bad_request, content_filter, server_error, network, timeout, ok, unknown.`,
		Example: `  spillway explain "ERROR: Selected model is at capacity. Please try a different model."
  spillway explain --status 429 --header 'retry-after: 20' '{"error":{"code":"rate_limit_exceeded","message":"..."}}'
  codex exec "fix the tests" 2>&1 | spillway explain --json -
  spillway explain --status 429 --header 'x-amzn-errortype: ThrottlingException' '{"message":"Too many tokens, please wait before trying again."}'
  curl -si "$URL" -d @request.json | spillway explain -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := a.explainInput(args, cmd.Flags().Changed("status"))
			if err != nil {
				return err
			}
			h := http.Header{}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return fail(ExitUsage, "--header %q: write it as 'Name: value'", kv)
				}
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			if cmd.Flags().Changed("status") && (status < 100 || status > 599) {
				return fail(ExitUsage, "--status %d: an HTTP status is from 100 to 599", status)
			}
			switch classify.Provider(provider) {
			case "", classify.OpenAI, classify.Anthropic, classify.Gemini, classify.Bedrock, classify.Vertex, classify.Azure:
			default:
				return fail(ExitUsage, "--provider %q: give openai, anthropic, gemini, bedrock, vertex or azure (or leave it out: the text usually tells)", provider)
			}
			in := classify.Input{Header: h, Provider: classify.Provider(provider), Now: time.Now()}
			if status != 0 {
				in.Status, in.Body = status, []byte(text)
			} else {
				in.Text = text
			}
			v := classify.Classify(in)
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				return enc.Encode(v)
			}
			writeVerdict(a.Stdout, v)
			if where := recordWhere(text); where != "" {
				fmt.Fprintf(a.Stdout, "  where:     %s\n", printable(where))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"class","provider","retryable","wait_seconds","summary","action"}`)
	cmd.Flags().IntVar(&status, "status", 0, "HTTP status of the response; TEXT is then its body")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "a response header 'Name: value' (repeatable), e.g. retry-after")
	cmd.Flags().StringVar(&provider, "provider", "", "provider hint when the text does not tell: openai, anthropic, gemini, bedrock, vertex, azure")
	return cmd
}

// explainInput is the text to explain; an empty one is an empty body when
// a status is given (a 503 with none is still a 503).
func (a *App) explainInput(args []string, status bool) (string, error) {
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		text := strings.Join(args, " ")
		if strings.TrimSpace(text) == "" && !status {
			return "", fail(ExitUsage, "nothing to explain: TEXT is empty; give the error's text, or pipe it in: ... 2>&1 | spillway explain -")
		}
		return text, nil
	}
	if f, ok := a.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return "", fail(ExitUsage, "give the error as TEXT, or pipe it in: ... 2>&1 | spillway explain -")
	}
	b, err := io.ReadAll(io.LimitReader(a.Stdin, maxExplainInput+1))
	if err != nil {
		return "", fail(ExitFail, "reading standard input: %w", err)
	}
	if len(b) > maxExplainInput {
		return "", fail(ExitUsage, "input is larger than %d MiB; pass the error lines, not the whole log", maxExplainInput>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", fail(ExitUsage, "nothing to explain: standard input was empty")
	}
	return string(b), nil
}

func writeVerdict(w io.Writer, v classify.Verdict) {
	v.Summary, v.Action, v.Code, v.Message = printable(v.Summary), printable(v.Action), printable(v.Code), printable(v.Message)
	fmt.Fprintln(w, v.String())
	retry := "no"
	if v.Retryable {
		retry = "yes"
	}
	if v.Wait > 0 {
		retry += ", wait " + classify.FormatWait(v.Wait)
	}
	fmt.Fprintf(w, "  class:     %s\n", v.Class)
	fmt.Fprintf(w, "  provider:  %s\n", v.Provider)
	fmt.Fprintf(w, "  retry:     %s\n", retry)
	if v.Status != 0 {
		fmt.Fprintf(w, "  status:    %d\n", v.Status)
	}
	if v.Code != "" || v.Message != "" {
		up := v.Message
		if v.Code != "" {
			up = strings.TrimSpace(v.Code + ": " + up)
		}
		fmt.Fprintf(w, "  upstream:  %s\n", up)
	}
}

// recordWhere names where the attempt of a line of spillway's event log
// went ("gpt-6-astra@us at openai-us, request 1f2e…, attempt 2"), "" when
// text is not one.
func recordWhere(text string) string {
	var r events.Record
	if json.Unmarshal([]byte(strings.TrimSpace(text)), &r) != nil || r.RequestID == "" || r.Model == "" {
		return ""
	}
	name := r.Model
	if r.Deployment != "" {
		name += "@" + r.Deployment
	}
	return fmt.Sprintf("%s at %s, request %s, attempt %d (%s)", name, r.Provider, r.RequestID, r.Attempt, r.Source)
}

// printable is s safe for a terminal: control characters (an escape
// sequence in a pasted log could move the cursor or retitle the window)
// and bytes that are not UTF-8 are written as Go escapes, the rest as is.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
