// Package bedrock is Amazon Bedrock's envelope around Anthropic's
// Messages format (InvokeModel): the model in the path, the Messages body
// with Bedrock's anthropic_version and no model, and answers streamed as an
// AWS event stream (application/vnd.amazon.eventstream) whose chunk frames
// each carry one Messages event.
package bedrock

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/jsonw"
)

// Version is the anthropic_version a Bedrock Messages body carries.
const Version = "bedrock-2023-05-31"

// ContentType is the content type of an AWS event stream.
const ContentType = "application/vnd.amazon.eventstream"

// Path is the InvokeModel path of model id (a model id, an inference
// profile or an inference profile's ARN), streamed or not: raw as it reads
// (a URL's Path), and escaped as the AWS SDK escapes it (its RawPath):
// the id is one segment, so its ":" and the "/" of an ARN are escaped too
// (smithy's httpbinding, which the SDK's bedrockruntime client uses).
func Path(id string, stream bool) (raw, escaped string) {
	method := "/invoke"
	if stream {
		method = "/invoke-with-response-stream"
	}
	return "/model/" + id + method, "/model/" + httpbinding.EscapePath(id, true) + method
}

// CountTokensPath is the path of Bedrock's CountTokens of model id, raw
// and escaped as Path's: the count of the input an InvokeModel request
// would have, which costs no tokens.
func CountTokensPath(id string) (raw, escaped string) {
	return "/model/" + id + "/count-tokens", "/model/" + httpbinding.EscapePath(id, true) + "/count-tokens"
}

// CountTokensBody is the CountTokens request of an InvokeModel body
// (Body's): {"input":{"invokeModel":{"body":"<the body, base64>"}}}, as
// the bedrockruntime API's CountTokensInput, whose InvokeModelTokensRequest
// body is a blob (base64 in JSON). Its answer is {"inputTokens":N}.
func CountTokensBody(invoke []byte) []byte {
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(invoke))+40)
	out = append(out, `{"input":{"invokeModel":{"body":"`...)
	out = base64.StdEncoding.AppendEncode(out, invoke)
	return append(out, `"}}}`...)
}

// Body is a Messages request body made Bedrock's: no model and no stream
// (the path says both), anthropic_version set unless the body has one of
// Bedrock's (bedrock-…: the Anthropic API's 2023-06-01 Bedrock refuses), and
// the betas of h's anthropic-beta headers as anthropic_beta unless the body
// has one (but the Anthropic API's own: firstPartyOnly). The other fields keep their bytes and their order; a body that
// is not a JSON object is an error (wire.ErrNotObject).
func Body(messages []byte, h http.Header) ([]byte, error) {
	add := []format.Member{{Name: "anthropic_version", Value: []byte(`"` + Version + `"`), Keep: format.Prefixed("bedrock-")}}
	if betas := slices.DeleteFunc(Betas(h), firstPartyOnly); len(betas) > 0 {
		v := []byte{'['}
		for i, b := range betas {
			if i > 0 {
				v = append(v, ',')
			}
			v = jsonw.String(v, b, false)
		}
		add = append(add, format.Member{Name: "anthropic_beta", Value: append(v, ']')})
	}
	return format.Reshape(messages, []string{"model", "stream"}, add...)
}

// firstPartyOnly reports a beta of the Anthropic API's own that Bedrock's
// body never carries: Claude Code's identity (claude-code-…, which Claude
// Code 2.1.328 in its Bedrock mode keeps in its header, out of the body:
// testdata/clients/claude-2.1.328-bedrock-first.json) and a Claude login's
// (oauth-…).
func firstPartyOnly(beta string) bool {
	return strings.HasPrefix(beta, "claude-code-") || strings.HasPrefix(beta, "oauth-")
}

// Betas are the betas h's anthropic-beta headers name (each a
// comma-separated list), in their order, each once.
func Betas(h http.Header) []string {
	var betas []string
	for _, v := range h.Values("Anthropic-Beta") {
		for b := range strings.SplitSeq(v, ",") {
			if b = strings.TrimSpace(b); b != "" && !slices.Contains(betas, b) {
				betas = append(betas, b)
			}
		}
	}
	return betas
}
