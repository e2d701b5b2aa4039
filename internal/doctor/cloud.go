package doctor

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/send"
)

// credentialSource is what says which credentials a cloud provider
// resolves (cloud.Transport).
type credentialSource interface {
	Source(ctx context.Context, name string, p config.Provider) (string, error)
}

// checkCloud checks a cloud provider (Bedrock, Vertex AI): which of
// spillway's own cloud credentials it resolves (never the secret), and
// whether the cloud accepts them, with one call that costs no tokens: a
// token count for the first model deployed on it (send.CountTokens, signed
// by the cloud transport like every request). With o.Probe each of its
// models also gets the smallest request. A cloud has no list of models to
// ask for free (send.ListModels refuses one).
func checkCloud(ctx context.Context, o Options, rt http.RoundTripper, p provider) ([]Finding, int) {
	pc := o.Config.Providers[p.name]
	from := ""
	if src, ok := rt.(credentialSource); ok {
		sctx, cancel := context.WithTimeout(ctx, o.Timeout)
		var err error
		from, err = src.Source(sctx, p.name, pc)
		cancel()
		if err != nil {
			advice := cloudAdvice(p, pc)
			return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(classify.Auth), advice: advice,
				Summary:  fmt.Sprintf("has no %s credentials (every request to it fails): %s", p.cloud, advice),
				Evidence: err.Error()}}, 0
		}
	}
	var fs []Finding
	if len(p.models) > 0 {
		fs = countTokens(ctx, o, rt, p, pc, from)
	}
	if !o.Probe {
		return fs, 0
	}
	n := 0
	for _, cand := range p.models {
		f, sent := probe(ctx, o, rt, cand, http.Header{})
		if sent {
			n++
		}
		fs = append(fs, f)
	}
	return fs, n
}

// countTokens asks the cloud to count the tokens of the smallest prompt
// for p's first model, and judges the credentials (from, their source) by
// the answer: accepted, rejected (what to check), or the model's trouble.
func countTokens(ctx context.Context, o Options, rt http.RoundTripper, p provider, pc config.Provider, from string) []Finding {
	cand := p.models[0]
	creds := p.cloud + " credentials"
	if from != "" {
		creds += " (" + from + ")"
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ans, err := send.CountTokens(cctx, rt, o.Config, cand, nil, nil)
	if err != nil {
		v := classify.Err(err)
		if v.Class == classify.Auth { // the cloud transport could not get a credential
			advice := cloudAdvice(p, pc)
			return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(v.Class), advice: advice,
				Summary: creds + " are refused before any request (no access token): " + advice, Evidence: err.Error()}}
		}
		return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(v.Class),
			Summary: creds + ": no answer to a token count: " + string(v.Class) + " (see network)", Evidence: err.Error()}}
	}
	v := classify.Classify(classify.Input{Status: ans.Status, Header: ans.Header, Body: ans.Body, Provider: classify.Provider(p.cloud)})
	evidence := fmt.Sprintf("%s for %s: %d in %s", ans.Call, cand.Model, ans.Status, ms(ans.Elapsed))
	if v.Code != "" || v.Message != "" {
		evidence += ": " + strings.TrimSpace(v.Code+" "+v.Message)
	}
	// an answer past the credentials (the model's trouble) accepts them
	accepted := Finding{Area: "key", Subject: p.name, Status: Healthy, Evidence: evidence,
		Summary: creds + " accepted (the cloud answered the token count past them)"}
	switch {
	case ans.Status/100 == 2:
		accepted.Summary = fmt.Sprintf("%s accepted: a token count of %s (%s) answered %d input tokens (a count costs nothing)",
			creds, cand.Model, cand.Upstream, ans.Tokens)
		return []Finding{accepted}
	case v.Class == classify.Auth:
		advice := cloudAdvice(p, pc)
		return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(v.Class), Evidence: evidence, advice: advice,
			Summary: strings.TrimSpace(fmt.Sprintf("%s are rejected (%d %s", creds, ans.Status, v.Code)) + "): " + advice}}
	case v.Class == classify.ModelNotFound:
		// past the credentials: the model is the trouble
		return []Finding{accepted, {Area: "model", Subject: cand.Model, Status: Broken, Class: string(v.Class), Evidence: evidence,
			Summary: "not found on " + p.name + " (" + cand.Upstream + "): " + strings.TrimSuffix(v.Action, ".")}}
	case v.Class == classify.BadRequest, v.Class == classify.ContextLength:
		// the credentials passed; not every model counts tokens
		return []Finding{accepted, {Area: "model", Subject: cand.Model, Status: Unknown, Evidence: evidence,
			Summary: "the token count was refused (" + string(v.Class) + "): --probe sends it a real request"}}
	case v.Class == classify.Quota:
		return []Finding{{Area: "quota", Subject: p.name, Status: Broken, Class: string(v.Class), Evidence: evidence,
			Summary: "quota used up: " + strings.TrimSpace(v.Summary+" "+v.Action)}}
	case v.Class == classify.RateLimit:
		return []Finding{{Area: "rate", Subject: p.name, Status: Degraded, Class: string(v.Class), Evidence: evidence,
			Summary: creds + " accepted, but rate-limited" + waitText(v.Wait)}}
	}
	return []Finding{{Area: "key", Subject: p.name, Status: Degraded, Class: string(v.Class), Evidence: evidence,
		Summary: creds + ": the token count did not answer: " + string(v.Class)}}
}

// cloudAdvice says what to check of a cloud's credentials: the
// classifier's advice for the cloud's auth failures, and what the token
// count needs.
func cloudAdvice(p provider, pc config.Provider) string {
	action := classify.Verdict{Class: classify.Auth, Provider: classify.Provider(p.cloud)}.Explained().Action
	switch pc.Type {
	case config.Bedrock:
		action += " The token count needs the IAM permission bedrock:CountTokens too."
	case config.Vertex:
		action += " The project is " + pc.Project + ", the region " + pc.Region + "."
	}
	return action
}
