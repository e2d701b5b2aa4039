package bench

// The overhead bench's Bedrock paths (OverheadOptions.Bedrock): a Messages
// client's stream answered through the gateway by the simulator's Bedrock
// (an AWS event stream, which the gateway reads and relays as SSE),
// against the same request answered by the simulator's Messages endpoint
// (SSE, relayed as it comes), each over its own direct baseline.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/format/messages"
	"github.com/spillway/spillway/sim"
)

// The Bedrock paths' names.
const (
	// MessagesPath is a Messages client's stream through the gateway,
	// answered by the simulator's Messages endpoint (SSE): the same-format
	// path the Bedrock path is compared with. Its baseline is
	// DirectTranslated (the request the gateway sends, direct).
	MessagesPath = "messages"
	// BedrockPath is the same Messages request through the gateway,
	// answered by the simulator's Bedrock (InvokeModelWithResponseStream,
	// signed by the gateway's cloud transport).
	BedrockPath = "bedrock"
	// DirectBedrock is its baseline: the request the gateway sends,
	// signed, straight to the simulator's Bedrock, its event stream read
	// with the bedrock framing's reader (the first event is the first
	// byte).
	DirectBedrock = "direct-bedrock"
)

// The gateway's Bedrock provider and model (startGateway): the simulator's
// claude-haiku-5-5, as the Messages path's bench-claude, on its Bedrock.
const (
	bedrockProvider = "bench-bedrock"
	bedrockModel    = "bench-bedrock-claude"
	bedrockRegion   = "us-east-1"
	bedrockUpstream = "anthropic.claude-haiku-5-5-v1:0"
)

// benchAWS are the AWS test credentials the simulator's Bedrock checks
// every signature against; the gateway's process finds them in its
// environment (benchAWSEnv), as the AWS default credential chain reads
// them, and the direct baseline signs with them too. Not a secret: no
// AWS account has them.
var benchAWS = sim.AWSCredentials{AccessKeyID: "AKIDSPILLWAYBENCH", SecretAccessKey: "spillway-bench-not-a-secret"}

// benchAWSEnv is the environment a gateway part runs in: the test
// credentials, and nothing of the machine's AWS setup (no shared files, no
// profile, no instance metadata), so that the default chain resolves them
// at once and only them.
func benchAWSEnv() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + benchAWS.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + benchAWS.SecretAccessKey, "AWS_SESSION_TOKEN=",
		"AWS_CONFIG_FILE=" + devNull, "AWS_SHARED_CREDENTIALS_FILE=" + devNull, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_PROFILE=", "AWS_DEFAULT_PROFILE=", "AWS_ROLE_ARN=", "AWS_WEB_IDENTITY_TOKEN_FILE=",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=", "AWS_CONTAINER_CREDENTIALS_FULL_URI=",
	}
}

// devNull is an empty file on Linux, where --procs runs.
const devNull = "/dev/null"

// messagesBody is a Messages request for model: the body the translated
// path's gateway sends (DirectTranslated), and the Messages and Bedrock
// paths' clients send.
func messagesBody(model string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":%v,"messages":[{"role":"user","content":[{"type":"text","text":"say hi"}]}]}`, model, messages.DefaultMaxTokens, stream)
}

// addBedrock adds the Bedrock paths and, unless the translated path has
// added it, the Messages path's baseline (DirectTranslated).
func (r *overheadRun) addBedrock() {
	if !slices.Contains(r.names, DirectTranslated) {
		r.names = append(r.names, DirectTranslated)
		r.urls[DirectTranslated] = strings.TrimSuffix(r.urls[Direct], "/v1/chat/completions") + "/v1/messages"
	}
	r.names = append(r.names, MessagesPath, DirectBedrock, BedrockPath)
	gw := strings.TrimSuffix(r.urls[Spillway], "/v1/chat/completions")
	r.urls[MessagesPath], r.urls[BedrockPath] = gw+"/v1/messages", gw+"/v1/messages"
	_, escaped := bedrock.Path(bedrockUpstream, true)
	r.urls[DirectBedrock] = strings.TrimSuffix(r.urls[Direct], "/v1/chat/completions") + escaped
	if p := r.procs[Spillway]; p != nil {
		r.procs[MessagesPath], r.procs[BedrockPath] = p, p
	}
}

// firstBedrock sends each Bedrock path's first request, untimed: the
// gateway loads its AWS configuration (the default chain) then, which can
// take longer than the warm-up allows (under the race detector).
func (r *overheadRun) firstBedrock(ctx context.Context) error {
	for _, n := range []string{DirectBedrock, BedrockPath} {
		if _, _, ok := r.senders[n](ctx, time.Now()); !ok {
			return fmt.Errorf("bench: %s path: its first request got no answer (a signature the simulator refused, or a gateway that found no AWS credentials in its environment)", n)
		}
	}
	return nil
}

// directBedrock is the Bedrock baseline's sender: the request the gateway
// sends to Bedrock for the Bedrock path, signed with SigV4 (as a client
// of Bedrock signs each request: over the exact bytes, at the time it
// goes), its event stream read with the bedrock framing's reader; its
// time to first byte is its first event's.
func directBedrock(c *http.Client, u string) sender {
	body, err := bedrock.Body([]byte(messagesBody("claude-haiku-5-5", true)), nil)
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: benchAWS.AccessKeyID, SecretAccessKey: benchAWS.SecretAccessKey}
	return func(ctx context.Context, due time.Time) (lat, ttfb time.Duration, ok bool) {
		if err != nil { // the body above is fixed: it cannot be refused
			return 0, 0, false
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if rerr != nil {
			return 0, 0, false
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", bedrock.ContentType)
		sum := sha256.Sum256(body)
		if signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "bedrock", bedrockRegion, time.Now()) != nil {
			return 0, 0, false
		}
		resp, rerr := c.Do(req)
		if rerr != nil {
			return 0, 0, false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, 0, false
		}
		events := bedrock.NewReader(resp.Body)
		defer events.Release()
		var first time.Time
		for {
			ev, rerr := events.Next()
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil || ev.Name == "error" {
				return 0, 0, false
			}
			if first.IsZero() {
				first = time.Now()
			}
		}
		if first.IsZero() {
			return 0, 0, false
		}
		return time.Since(due), first.Sub(due), true
	}
}

// addBedrock adds, at rps (k), the Bedrock path's added time to first
// byte p50 over its baseline, the Messages path's over its own, and their
// ratio; nothing when the run has no Bedrock path.
func (rep *OverheadReport) addBedrock(o OverheadOptions, k string, at map[string]PathResult) {
	bd, ok := at[BedrockPath]
	if !ok {
		return
	}
	if rep.BedrockTTFBRatio == nil {
		rep.BedrockAddedTTFBUS, rep.MessagesAddedTTFBUS, rep.BedrockTTFBRatio = map[string]float64{}, map[string]float64{}, map[string]float64{}
	}
	added, same := bedrockAdded(at)
	rep.BedrockAddedTTFBUS[k], rep.MessagesAddedTTFBUS[k] = added, same
	if same > 0 {
		rep.BedrockTTFBRatio[k] = added / same
	}
	o.Progress("%s req/s: added TTFB p50, Bedrock's event stream %.0fµs ÷ the same format's SSE %.0fµs: %s (direct-bedrock %.0fµs, bedrock %.0fµs)",
		k, added, same, ratio(rep.BedrockTTFBRatio, k), at[DirectBedrock].TTFBP50US, bd.TTFBP50US)
}

// bedrockAdded is, at one rate, the Bedrock path's added time to first
// byte p50 over its baseline and the Messages path's over its own, in µs.
func bedrockAdded(at map[string]PathResult) (bedrockUS, messagesUS float64) {
	return at[BedrockPath].TTFBP50US - at[DirectBedrock].TTFBP50US, at[MessagesPath].TTFBP50US - at[DirectTranslated].TTFBP50US
}
