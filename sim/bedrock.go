package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/spillway/spillway/config"
)

// Amazon Bedrock's InvokeModel for Anthropic's models: POST
// /model/{modelId}/invoke (the Messages answer whole) and
// /model/{modelId}/invoke-with-response-stream (an AWS event stream whose
// chunk frames each carry one Messages event, base64 in {"bytes": …}). The
// body is a Messages body without model and stream, with anthropic_version
// bedrock-2023-05-31 and the betas as anthropic_beta. Errors are an HTTP
// status, x-amzn-errortype and {"message": …}; in a stream, exception
// frames.

const (
	bedrockVersion2023 = "bedrock-2023-05-31"
	// bedrockErrorNamespace follows the type in x-amzn-errortype, as
	// Bedrock sends it (the SDKs keep what is before the colon).
	bedrockErrorNamespace = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
	eventStreamType       = "application/vnd.amazon.eventstream"
)

// cloudCall is the cloud a Messages or Gemini call came through, and the
// Vertex AI resource it named.
type cloudCall struct {
	kind                                  string // bedrock, vertex
	project, location, publisher, modelID string // Vertex AI
}

// bedrockError is one Bedrock error: its type (x-amzn-errortype), status
// and message.
type bedrockError struct {
	typ     string
	status  int
	message string
}

// bedrockErrorOf is Bedrock's error for the failure f of call c.
func (s *Server) bedrockErrorOf(c *call, f failure) bedrockError {
	e := bedrockError{"InternalServerException", 500, "The system encountered an unexpected error during processing. Try your request again."}
	switch f.class {
	case "capacity":
		e = bedrockError{"ServiceUnavailableException", 503, "Bedrock is unable to process your request."}
		if s.inOutage(c.model.name, s.clock.Now()) {
			e = bedrockError{"ModelNotReadyException", 429, "Model is not ready for inference. Wait and try your request again."}
		}
	case "rate_limit":
		e = bedrockError{"ThrottlingException", 429, "Too many requests, please wait before trying again."}
		if f.rate != nil && f.rate.which == "tokens" {
			e.message = "Too many tokens, please wait before trying again."
		}
	case "usage_limit":
		e = bedrockError{"ThrottlingException", 429, "Too many tokens per day, please wait before trying again."}
	case "quota":
		e = bedrockError{"AccessDeniedException", 403, "You don't have access to the model with the specified model ID."}
	case "auth":
		e = bedrockError{"UnrecognizedClientException", 403, "The security token included in the request is invalid."}
	case "timeout":
		e = bedrockError{"ModelTimeoutException", 408, "Model has timed out in processing the request. Try your request again."}
	case "model_not_found":
		e = bedrockError{"ValidationException", 400, "The provided model identifier is invalid."}
	case "context_length":
		e = bedrockError{"ValidationException", 400, "Input is too long for requested model."}
	case "bad_json", "bad_request", "content_filter", "too_large":
		e = bedrockError{"ValidationException", 400, "Malformed input request, please reformat your input and try again."}
	}
	if f.message != "" && f.class != "rate_limit" {
		e.message = f.message
	}
	return e
}

// bedrockRequestID is an x-amzn-RequestId (a UUID) for call id.
func bedrockRequestID(id string) string {
	return "00000000-0000-4000-8000-" + fmt.Sprintf("%012s", id)[:12]
}

func writeBedrockError(w http.ResponseWriter, id string, e bedrockError) {
	w.Header().Set("x-amzn-errortype", e.typ+bedrockErrorNamespace)
	w.Header().Set("x-amzn-RequestId", bedrockRequestID(id))
	writeJSON(w, e.status, map[string]string{"message": e.message})
}

// bedrockException is the exception frame's type (:exception-type) of a
// failure in a stream.
func bedrockException(class string) (typ, message string) {
	switch class {
	case "capacity":
		return "serviceUnavailableException", "Bedrock is unable to process your request."
	case "rate_limit":
		return "throttlingException", "Too many requests, please wait before trying again."
	case "server_error":
		return "internalServerException", "The system encountered an unexpected error during processing. Try your request again."
	}
	return "modelStreamErrorException", "The model encountered an error processing the stream. Try your request again."
}

func (s *Server) handleBedrock(w http.ResponseWriter, r *http.Request) {
	p := anthropicProto{s: s, cloud: &cloudCall{kind: "bedrock"}}
	c := &call{proto: p, id: s.nextID("")}
	// the model id is escaped (its ":", an ARN's "/"): split the path as
	// it came
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/model/")
	i := strings.LastIndexByte(rest, '/')
	unknown := bedrockError{"UnknownOperationException", 404, "The simulator's Bedrock serves POST /model/MODEL_ID/invoke, /model/MODEL_ID/invoke-with-response-stream and /model/MODEL_ID/count-tokens (MODEL_ID path-escaped)."}
	if i < 0 {
		writeBedrockError(w, c.id, unknown)
		return
	}
	id, err := url.PathUnescape(rest[:i])
	action := rest[i+1:]
	if err != nil || (action != "invoke" && action != "invoke-with-response-stream" && action != "count-tokens") {
		writeBedrockError(w, c.id, unknown)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		p.writeError(w, c, failure{class: "too_large", message: fmt.Sprintf("Request body is larger than the limit of %d bytes.", s.maxBody)})
		return
	}
	key, refused := s.auth.bedrock(r, body, s.servesRegion)
	if refused != nil {
		writeBedrockError(w, c.id, *refused)
		return
	}
	m, ok := s.cloudModel(bedrockPool, config.BedrockVendor(id), wireBedrock)
	if !ok {
		c.model = modelInfo{name: bedrockPool + config.BedrockVendor(id)}
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["model_not_found"]++ })
		p.writeError(w, c, failure{class: "model_not_found"})
		return
	}
	if action == "count-tokens" {
		s.bedrockCountTokens(w, c, body)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c, fields, ok := s.prepare(w, r, p, key)
	if !ok {
		return
	}
	c.model = m
	c.stream = action == "invoke-with-response-stream"
	betas, msg := bedrockBodyCheck(fields)
	if msg != "" {
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["bad_request"]++ })
		p.writeError(w, c, failure{class: "bad_request", message: msg})
		return
	}
	s.runMessages(w, r, c, fields, betas)
}

// bedrockCountTokens answers CountTokens for an InvokeModel body:
// {"input":{"invokeModel":{"body":"<base64>"}}} (a Converse input is not
// served), the body checked as InvokeModel checks it, answered
// {"inputTokens":N}. It costs nothing and no pool counts it.
func (s *Server) bedrockCountTokens(w http.ResponseWriter, c *call, body []byte) {
	var in struct {
		Input struct {
			InvokeModel *struct {
				Body []byte `json:"body"` // base64 in JSON, as a blob is
			} `json:"invokeModel"`
		} `json:"input"`
	}
	invalid := func(msg string) {
		writeBedrockError(w, c.id, bedrockError{"ValidationException", 400, msg})
	}
	if err := json.Unmarshal(body, &in); err != nil {
		invalid("Malformed input request: " + err.Error() + ", please reformat your input and try again.")
		return
	}
	if in.Input.InvokeModel == nil || len(in.Input.InvokeModel.Body) == 0 {
		invalid("1 validation error detected: Value at 'input' failed to satisfy constraint: the simulator counts an invokeModel input with a body")
		return
	}
	var fields map[string]any
	if err := json.Unmarshal(in.Input.InvokeModel.Body, &fields); err != nil || fields == nil {
		invalid("Malformed input request: the invokeModel body is not a JSON object, please reformat your input and try again.")
		return
	}
	if _, msg := bedrockBodyCheck(fields); msg != "" {
		invalid(msg)
		return
	}
	w.Header().Set("x-amzn-RequestId", bedrockRequestID(c.id))
	writeJSON(w, http.StatusOK, map[string]int{"inputTokens": EstimateTokens(in.Input.InvokeModel.Body)})
}

// apiVersion is an Anthropic API version (2023-06-01): the Anthropic Go
// SDK (v2.15) in its Bedrock and Vertex AI modes sends its anthropic-version
// header's date as the body's anthropic_version, and the clouds take it.
var apiVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// cloudVersion reports whether v is an anthropic_version a cloud takes:
// its own (cloud) or an API version's date.
func cloudVersion(v any, cloud string) bool {
	s, ok := v.(string)
	return ok && (s == cloud || apiVersion.MatchString(s))
}

// bedrockBodyCheck checks a Bedrock Messages body as Bedrock's schema
// does; it returns the betas (anthropic_beta), or the ValidationException's
// message.
func bedrockBodyCheck(m map[string]any) (betas string, msg string) {
	const reformat = ", please reformat your input and try again."
	for _, k := range []string{"model", "stream"} {
		if _, ok := m[k]; ok {
			return "", "Malformed input request: #: extraneous key [" + k + "] is not permitted" + reformat
		}
	}
	v, ok := m["anthropic_version"]
	if !ok {
		return "", "Malformed input request: #: required key [anthropic_version] not found" + reformat
	}
	if !cloudVersion(v, bedrockVersion2023) {
		return "", fmt.Sprintf("Malformed input request: #/anthropic_version: %v is not a valid enum value", v) + reformat
	}
	if b, ok := m["anthropic_beta"]; ok {
		list, ok := b.([]any)
		var names []string
		for _, x := range list {
			n, isStr := x.(string)
			if !isStr {
				ok = false
			}
			names = append(names, n)
		}
		if !ok {
			return "", "Malformed input request: #/anthropic_beta: expected type: JSONArray of strings" + reformat
		}
		betas = strings.Join(names, ",")
	}
	return betas, ""
}

// runMessages answers a Messages call that came through a cloud (its
// body's model and anthropic_version checked): as handleMessages does.
func (s *Server) runMessages(w http.ResponseWriter, r *http.Request, c *call, m map[string]any, betas string) {
	c.prompt = lastUser(m["messages"], "role", "content", true)
	c.prefix = trailingAssistant(m["messages"])
	c.convo = messagesConvo(m, betas)
	if c.prefix != "" && strings.TrimRight(c.prefix, " \t\r\n") != c.prefix {
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["bad_request"]++ })
		c.proto.writeError(w, c, failure{class: "bad_request", message: "messages: final assistant content cannot end with trailing whitespace"})
		return
	}
	s.run(w, r, c)
}

// bedrockFrames writes a Bedrock stream: each Messages event in a chunk
// frame, encoded with the SDK's event-stream encoder (real CRCs); the
// message_stop event carries the invocation's metrics, as Bedrock's does.
type bedrockFrames struct {
	enc       *eventstream.Encoder
	c         *call
	start     time.Time // real: the latencies are a client's
	firstByte time.Duration
	out       int
}

func (f *bedrockFrames) header(h http.Header) {
	h.Set("Content-Type", eventStreamType)
	h.Set("X-Amzn-Bedrock-Content-Type", "application/json")
	h.Set("x-amzn-RequestId", bedrockRequestID(f.c.id))
}

func (f *bedrockFrames) event(w io.Writer, name string, data []byte, v any) error {
	switch name {
	case "ping":
		return nil // Bedrock's streams have none
	case "message_delta":
		var d struct {
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(data, &d) == nil {
			f.out = d.Usage.OutputTokens
		}
	case "message_stop":
		ev, _ := v.(map[string]any)
		withMetrics := map[string]any{}
		for k, x := range ev {
			withMetrics[k] = x
		}
		withMetrics["amazon-bedrock-invocationMetrics"] = map[string]any{
			"inputTokenCount": f.c.inTokens, "outputTokenCount": f.out,
			"invocationLatency": time.Since(f.start).Milliseconds(), "firstByteLatency": f.firstByte.Milliseconds(),
		}
		var err error
		if data, err = json.Marshal(withMetrics); err != nil {
			return err
		}
	}
	if f.firstByte == 0 {
		f.firstByte = max(time.Since(f.start), time.Millisecond)
	}
	return f.enc.Encode(w, chunkFrame(data))
}

// chunkFrame is the chunk frame carrying event data.
func chunkFrame(data []byte) eventstream.Message {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(data)})
	var h eventstream.Headers
	h.Set(":event-type", eventstream.StringValue("chunk"))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("event"))
	return eventstream.Message{Headers: h, Payload: payload}
}

// corrupt writes a chunk frame whose message CRC is wrong.
func (f *bedrockFrames) corrupt(w io.Writer) error {
	var buf bytes.Buffer
	if err := f.enc.Encode(&buf, chunkFrame([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"garbled"}}`))); err != nil {
		return err
	}
	b := buf.Bytes()
	b[len(b)-1] ^= 0xff
	_, err := w.Write(b)
	return err
}

// exception writes an exception frame for the failure f.
func (f *bedrockFrames) exception(w io.Writer, fl failure) error {
	typ, msg := bedrockException(fl.class)
	if fl.message != "" {
		msg = fl.message
	}
	payload, _ := json.Marshal(map[string]string{"message": msg})
	var h eventstream.Headers
	h.Set(":exception-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("exception"))
	return f.enc.Encode(w, eventstream.Message{Headers: h, Payload: payload})
}

// bedrockStreamError ends a Bedrock stream with an exception frame.
func bedrockStreamError(sw *stream, f failure) error {
	bf, ok := sw.frames.(*bedrockFrames)
	if !ok {
		return fmt.Errorf("sim: a Bedrock stream without its framer")
	}
	sw.begin()
	if err := bf.exception(sw.w, f); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// bedrockHeaders are the headers of a whole Bedrock answer.
func bedrockHeaders(h http.Header, c *call, u usage) {
	h.Set("x-amzn-RequestId", bedrockRequestID(c.id))
	h.Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(u.in))
	h.Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(u.out))
}
