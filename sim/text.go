package sim

import (
	"strings"

	"github.com/spillway/spillway/internal/wire"
)

var filler = []string{"spill", "over", "the", "weir", "and", "keep", "flowing"}

// Answer is the simulator's deterministic answer for model to prompt: the
// model's name in brackets, the prompt's first 24 words, then filler words up
// to minTokens tokens. Tests compare a client's output with it.
func Answer(model, prompt string, minTokens int) string {
	words := strings.Fields(prompt)
	if len(words) > 24 {
		words = words[:24]
	}
	var b strings.Builder
	b.WriteString("[" + model + "]")
	n := 1
	for _, w := range words {
		b.WriteString(" " + w)
		n++
	}
	for i := 0; n < minTokens; i++ {
		b.WriteString(" " + filler[i%len(filler)])
		n++
	}
	return b.String()
}

// Tokens splits text into streaming tokens: each word with its leading
// space, so that joining them gives the text back.
func Tokens(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if space && inWord {
			out = append(out, text[start:i])
			start = i
			inWord = false
		} else if !space {
			inWord = true
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// EstimateTokens is the input token count of a request body, counted as
// spillway estimates it: text at about four bytes a token (fat bodies
// count more, as they do upstream), an inline image or PDF at what the
// providers charge for it, never at its base64's length.
func EstimateTokens(body []byte) int { return wire.EstimateTokens(body) }
