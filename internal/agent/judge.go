package agent

import (
	"regexp"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// handled are the classes exec retries or moves on from; when the driver
// gives up on one of them, spillway says why.
var handled = map[classify.Class]bool{classify.Capacity: true, classify.RateLimit: true, classify.Network: true,
	classify.Timeout: true, classify.ServerError: true, classify.ModelNotFound: true, classify.ContextLength: true, classify.UsageLimit: true}

func typeOf(k Kind) wire.Format {
	switch k {
	case Claude:
		return wire.Anthropic
	case Gemini:
		return wire.Gemini
	}
	if s := specOf(k); s != nil && s.format != "" {
		return s.format
	}
	return wire.OpenAI
}

// errorLine picks the lines an agent itself prints about a failure, at the
// start of a line and in its own form: Codex's "ERROR: " and JSON error
// events, Claude Code's "API Error" and its JSON result (only with an
// api_error_status), Gemini CLI's "[API Error". Tool output echoed by the
// agent ("Error: EACCES …", a test log saying "timeout") never matches, so
// it can never be taken for a provider failure.
var errorLine = regexp.MustCompile(`^(ERROR: |API Error|\[API Error|Error when talking to Gemini API|Attempt \d+ failed: |\{"type":"(error|turn\.failed)"|\{"type":"result".*"api_error_status":[1-9])`)

// geminiCut judges a Gemini CLI run that exited 0: after a stream that
// ended without its finish reason it prints "[ERROR] Model stream ended
// without a finish reason." and exits 0 with the answer cut short. Only its
// own "[ERROR] " lines on stderr count, and only a failure exec handles (a
// safety block is the answer).
func geminiCut(classifier func(classify.Input) classify.Verdict, out runOut) classify.Verdict {
	for _, l := range strings.Split(out.stderr.String(), "\n") {
		if !strings.HasPrefix(l, "[ERROR] ") {
			continue
		}
		if v := classifier(classify.Input{Text: l, Provider: classify.Gemini}); handled[v.Class] && !v.Notice {
			return v
		}
	}
	return classify.Verdict{Class: classify.OK}
}

// ansiCodes are a terminal's colour and style codes (ESC [ … m).
var ansiCodes = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// judge classifies what a failed run printed.
func judge(classifier func(classify.Input) classify.Verdict, kind Kind, out runOut) classify.Verdict {
	best := classify.Verdict{Class: classify.Unknown}
	for _, t := range []*tail{out.stderr, out.stdout} {
		var lines []string
		own := errorLine
		if s := specOf(kind); s != nil && s.errorLine != nil {
			own = s.errorLine
		}
		for _, l := range strings.Split(t.String(), "\n") {
			if own.MatchString(l) { // (an agent's colours tell its own lines from tool output)
				lines = append(lines, ansiCodes.ReplaceAllString(l, "")) // and stay out of exec's words
			}
		}
		if len(lines) == 0 {
			continue
		}
		if len(lines) > 50 {
			lines = lines[len(lines)-50:]
		}
		v := classifier(classify.Input{Text: strings.Join(lines, "\n"), Provider: classify.Provider(typeOf(kind))})
		if v.Class != classify.Unknown && !v.Notice {
			return v
		}
	}
	return best
}
