package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The names a configuration gives its models and deployments, and what each
// may be: the checks the loader runs on them, exported for the front ends
// that take a model's name from a request or a command line.

// CheckModelName refuses a model name an agent would misread on its
// command line (exec and the queue give a model to an agent as --model
// NAME, or in a {model} placeholder of a shell's command): one that starts
// with "-" (read as a flag) or holds whitespace or a control character.
func CheckModelName(name string) error {
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("model name %q starts with \"-\": an agent given it after --model reads it as a flag; start it with a letter or digit", name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("model name %q holds whitespace or a control character (%U): an agent's command line would split or misread it; name the model without them", name, []rune(name[i:])[0])
	}
	if name == "" {
		return errors.New("a model needs a name")
	}
	return nil
}

// deploymentName is what a deployment may be called: routes ("a@b:capacity >
// ..."), metric labels and explain's output write it as model@name.
var deploymentName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// pathModel is what a model name put in a URL path may be: nothing that
// could climb out of its segment, start a query or a fragment, or read as
// another segment once decoded (../, %2F, ?, #).
var pathModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckPathModel says why name cannot go in a URL path, nil when it can:
// a letter or digit, then up to 127 letters, digits, '.', '_' and '-'. A
// Gemini model's name goes in its URL's path (…/models/NAME:generateContent),
// so the loader holds a Gemini deployment's upstream name to it, and the
// front ends a name a request asks for.
func CheckPathModel(name string) error {
	if !pathModel.MatchString(name) {
		return fmt.Errorf("the model name %q cannot go in a URL: a model name in the path is a letter or digit, then up to 127 letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

// vertexModel is what a Vertex AI model id may be: a path segment, with
// the version after '@' (claude-sonnet-4-5@20250929).
var vertexModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// checkVertexModel says why upstream cannot be a model of Vertex AI
// provider: a name no publisher is known for (VertexPublisher), or one
// that cannot go in a URL path.
func checkVertexModel(upstream, provider string) error {
	if VertexPublisher(upstream) == "" {
		return fmt.Errorf("%q is not a model spillway knows a Vertex AI publisher for (provider %s): Vertex AI serves Claude models (claude-…, publisher anthropic) and Gemini models (gemini-…, publisher google); write the model's Vertex AI id, like claude-sonnet-4-5@20250929", upstream, provider)
	}
	if !vertexModel.MatchString(upstream) {
		return fmt.Errorf("the model id %q cannot go in a Vertex AI URL: a letter or digit, then up to 127 letters, digits, '.', '_', '-' and '@'", upstream)
	}
	return nil
}
