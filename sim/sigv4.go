package sim

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

func newCloudAuth(o CloudAuth) (*cloudAuth, error) {
	if o.TokenLifetime <= 0 {
		o.TokenLifetime = time.Hour
	}
	a := &cloudAuth{opts: o, tokens: map[string]time.Time{}}
	if o.AWS != nil && (o.AWS.AccessKeyID == "" || o.AWS.SecretAccessKey == "") {
		return nil, fmt.Errorf("sim: AWS test credentials need an access key id and a secret access key (ACCESS_KEY_ID:SECRET)")
	}
	if o.GoogleServiceAccount {
		var err error
		if a.sa, err = newServiceAccount(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// The answers AWS gives a request it cannot authenticate.
var (
	awsMissingAuth = bedrockError{"MissingAuthenticationTokenException", 403, "Missing Authentication Token"}
	awsUnknownKey  = bedrockError{"UnrecognizedClientException", 403, "The security token included in the request is invalid."}
	awsBadSig      = bedrockError{"InvalidSignatureException", 403, "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}
)

// bedrock authenticates a Bedrock request with body: a SigV4 signature by
// the configured credentials, scoped to service bedrock, to a region
// servesRegion accepts and to the date of its X-Amz-Date, over host and
// x-amz-date at least; or the configured Bedrock API key; any request
// when neither is configured. It returns the caller's key (the access key
// id, or the API key) for the scenario's keys and limits, or AWS's
// refusal.
func (a *cloudAuth) bedrock(r *http.Request, body []byte, servesRegion func(string) bool) (key string, refused *bedrockError) {
	authz := r.Header.Get("Authorization")
	open := a.opts.AWS == nil && a.opts.BedrockAPIKey == ""
	if b := bearer(r); b != "" {
		if open || (a.opts.BedrockAPIKey != "" && subtle.ConstantTimeCompare([]byte(b), []byte(a.opts.BedrockAPIKey)) == 1) {
			return b, nil
		}
		return "", &awsUnknownKey
	}
	if !strings.HasPrefix(authz, "AWS4-HMAC-SHA256 ") {
		if open {
			return "bedrock", nil
		}
		return "", &awsMissingAuth
	}
	sig, err := parseSigV4(authz)
	if err != nil {
		e := awsBadSig
		e.message = err.Error()
		return "", &e
	}
	if open {
		return sig.accessKeyID, nil
	}
	if a.opts.AWS == nil || sig.accessKeyID != a.opts.AWS.AccessKeyID {
		return "", &awsUnknownKey
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Amz-Security-Token")), []byte(a.opts.AWS.SessionToken)) != 1 {
		return "", &awsUnknownKey
	}
	if msg := sig.scopeError(r.Header.Get("X-Amz-Date"), servesRegion); msg != "" {
		e := awsBadSig
		e.message = msg
		return "", &e
	}
	want, err := a.sign(r, body, sig)
	if err != nil {
		e := awsBadSig
		e.message = err.Error()
		return "", &e
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(sig.signature)) != 1 {
		return "", &awsBadSig
	}
	return sig.accessKeyID, nil
}

// sigV4 is what an Authorization header of AWS4-HMAC-SHA256 says.
type sigV4 struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

// scopeError is AWS's words for what is wrong with the signature's scope
// and signed headers given the request's X-Amz-Date (amzDate) and the
// regions the request may be for, "" when nothing is: AWS signs nothing
// it cannot place (a signature must say which service, region and day it
// is for, and cover the host and the time), so neither does the
// simulator, however well the rest is signed.
func (s sigV4) scopeError(amzDate string, servesRegion func(string) bool) string {
	switch {
	case s.service != "bedrock":
		return fmt.Sprintf("Credential should be scoped to correct service: 'bedrock'. (not %q)", s.service)
	case !servesRegion(s.region):
		return fmt.Sprintf("Credential should be scoped to a valid region, not '%.64s'. ", s.region)
	case !slices.Contains(s.signedHeaders, "host"):
		return "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."
	case amzDate == "":
		return "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
	case !slices.Contains(s.signedHeaders, "x-amz-date"):
		return "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization."
	case len(amzDate) < 8 || s.date != amzDate[:8]:
		return fmt.Sprintf("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%.16s' != '%.8s', from '%.32s'.", s.date, amzDate, amzDate)
	}
	return ""
}

// parseSigV4 reads "AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request,
// SignedHeaders=a;b, Signature=hex".
func parseSigV4(authz string) (sigV4, error) {
	var s sigV4
	for _, part := range strings.Split(strings.TrimPrefix(authz, "AWS4-HMAC-SHA256 "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return s, fmt.Errorf("Authorization header requires a Credential of the form ACCESS_KEY_ID/DATE/REGION/SERVICE/aws4_request")
			}
			s.accessKeyID, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	if s.accessKeyID == "" || len(s.signedHeaders) == 0 || s.signature == "" {
		return s, fmt.Errorf("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters")
	}
	return s, nil
}

// sign is the signature the configured credentials make of r as it was
// received (its path before a region's prefix was taken off, the headers
// it signed, body's hash), at the time it says (X-Amz-Date), with the
// SDK's own signer: the simulator checks the signature, it does not
// reimplement it.
func (a *cloudAuth) sign(r *http.Request, body []byte, sig sigV4) (string, error) {
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "", fmt.Errorf("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Opaque: "//" + r.Host + receivedPath(r), RawQuery: r.URL.RawQuery}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.URL, req.Host = u, r.Host
	for _, h := range sig.signedHeaders {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			for _, v := range r.Header.Values(h) {
				req.Header.Add(h, v)
			}
		}
	}
	hash := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: a.opts.AWS.AccessKeyID, SecretAccessKey: a.opts.AWS.SecretAccessKey, SessionToken: a.opts.AWS.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(hash[:]), sig.service, sig.region, at); err != nil {
		return "", err
	}
	mine, err := parseSigV4(req.Header.Get("Authorization"))
	if err != nil {
		return "", err
	}
	if strings.Join(mine.signedHeaders, ";") != strings.Join(sig.signedHeaders, ";") {
		return "", fmt.Errorf("The request signature we calculated does not match the signature you provided: signed headers %s, received %s", strings.Join(mine.signedHeaders, ";"), strings.Join(sig.signedHeaders, ";"))
	}
	return mine.signature, nil
}
