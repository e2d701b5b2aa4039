package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/format/vertex"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// The calls a cloud client makes besides the model's (Claude Code in its
// Bedrock and Vertex AI modes): token counts, and Bedrock's inference
// profiles. w is already the cloud's answer (bedrock.Answer,
// vertex.Answer): an error written in Messages' shape goes out in the
// cloud's.

// messagesEP is the endpoint whose shape the calls' errors are written in
// (Messages'; the cloud's answer re-shapes them).
var messagesEP = wire.EndpointOf(wire.Messages)

// cloudCount answers a token count of a cloud client (Bedrock's
// POST /bedrock/model/{id}/count-tokens, Vertex AI's
// …/publishers/anthropic/models/count-tokens:rawPredict) for model, a
// configured model (CloudModel). The client's body is read as the
// Messages body it stands for (bedrock.ClientCount, vertex.ClientCount)
// and counted by the first of the model's deployments, in their order,
// that counts for free and answers: a Bedrock deployment (CountTokens), a
// Vertex AI deployment of an Anthropic model (count-tokens rawPredict),
// each with spillway's own cloud credentials. The Anthropic API's
// count_tokens is not asked: the simulator, and so the tests, do not serve
// it, and a count through a caller's own key is that caller's to make.
// None of the client's credentials or headers go, but its betas.
//
// The answer is the cloud's: Bedrock's {"inputTokens":N}, Vertex AI's
// {"input_tokens":N}. A model none of whose deployments counts is 404
// not_found (Bedrock's ResourceNotFoundException, Google's NOT_FOUND); one
// whose counting deployments all failed is an api_error naming each
// (Bedrock's 500 InternalServerException, Google's 500 INTERNAL); a body a
// cloud refused (400) everywhere is the client's to fix: 400 with the
// cloud's words. A cloud's words never carry an account (send.Counted's
// Error).
//
// countFor (clouds.go) has checked the gateway key and that the key may
// use model, dropped the client's credentials, and left the body (read
// within gateway.max_body_mb) in r.Body to read again.
func (s *Server) cloudCount(w http.ResponseWriter, r *http.Request, cloud, model string) {
	st := s.stateOf(r.Context())
	cfg := st.cfg
	raw, outcome := readBody(w, r, messagesEP, st)
	if outcome != "" {
		return
	}
	var (
		body   []byte
		header = http.Header{}
		err    error
	)
	switch cloud {
	case config.Bedrock:
		// Bedrock's betas are the body's (anthropic_beta), never the
		// client's anthropic-beta header (Claude Code's first-party betas)
		var betas []string
		body, betas, err = bedrock.ClientCount(raw, model)
		if len(betas) > 0 {
			header.Set("Anthropic-Beta", strings.Join(betas, ","))
		}
	case config.Vertex:
		body, err = vertex.ClientCount(raw, model)
		if beta := r.Header.Values("Anthropic-Beta"); len(beta) > 0 {
			header["Anthropic-Beta"] = beta
		}
	default:
		err = fmt.Errorf("no token count of cloud %q", cloud)
	}
	if err != nil {
		reject(w, messagesEP, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
		return
	}
	if t := cfg.ModelType(model); t != messagesEP.Format {
		refuse(w, messagesEP, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: model %s is %s's, not one of Anthropic's: a cloud client's token count counts an Anthropic model's", model, t), 0)
		return
	}
	secrets := st.secrets.With(callerSecrets(r)...)
	var failed []string
	refused := 0 // counts refused as bad requests (400)
	full := 0    // counts answered "full" (429, 503, 529)
	for _, d := range cfg.Deployments(model) {
		cand, ok := counter(cfg, model, d)
		if !ok {
			continue
		}
		ans, err := send.CountTokens(r.Context(), s.rt, cfg, cand, body, header)
		switch {
		case err != nil:
			if r.Context().Err() != nil {
				return // the client went
			}
			failed = append(failed, fmt.Sprintf("%s: %s", deploymentName(d), secrets.String(err.Error())))
			continue
		case ans.Status/100 == 2:
			s.log.Info("request", "endpoint", r.URL.Path, "model", model, "outcome", "ok", "counted_by", deploymentName(d))
			if cloud == config.Bedrock {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write(bedrock.CountAnswer(ans.Tokens))
				return
			}
			writeJSON(w, http.StatusOK, map[string]int{"input_tokens": ans.Tokens})
			return
		case ans.Status == http.StatusBadRequest:
			refused++
		case ans.Status == http.StatusTooManyRequests, ans.Status == http.StatusServiceUnavailable, ans.Status == 529:
			full++
		}
		failed = append(failed, fmt.Sprintf("%s: HTTP %d: %s", deploymentName(d), ans.Status, secrets.String(ans.Error)))
	}
	s.log.Info("request", "endpoint", r.URL.Path, "model", model, "outcome", "not_counted")
	switch {
	case len(failed) == 0:
		refuse(w, messagesEP, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: no deployment of %s counts tokens (its Bedrock and Vertex AI deployments would; the Anthropic API's count_tokens is not asked)", model), 0)
		return
	case refused == len(failed):
		// every cloud refused the body: the client's to fix
		reject(w, messagesEP, http.StatusBadRequest, fmt.Sprintf("spillway: the token count of %s was refused: %s", model, strings.Join(failed, "; ")))
		return
	}
	class := classify.ServerError
	if full == len(failed) {
		// every counter is full for now: a count later may be answered
		class = classify.Capacity
	}
	status, b := formats.WireOf(messagesEP).ErrorBody(class, fmt.Sprintf("spillway: no deployment of %s could count tokens: %s", model, strings.Join(failed, "; ")))
	w.Header().Set("Content-Type", "application/json")
	if class != classify.Capacity {
		w.Header().Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	w.Write(b)
}

// counter is the candidate of deployment d of model that counts tokens
// for free: on Bedrock, or an Anthropic model on Vertex AI.
func counter(cfg *config.Config, model string, d config.Deployment) (policy.Candidate, bool) {
	prov, ok := cfg.Providers[d.Provider]
	if !ok {
		return policy.Candidate{}, false
	}
	switch {
	case prov.Type == config.Bedrock:
	case prov.Type == config.Vertex && config.VertexPublisher(d.Upstream) == "anthropic":
	default:
		return policy.Candidate{}, false
	}
	return policy.Candidate{Model: model, Upstream: d.Upstream, Provider: d.Provider, Deployment: d.Name, Format: config.Anthropic, Cloud: prov.Type}, true
}

// deploymentName names d in a message: its name, else its provider's.
func deploymentName(d config.Deployment) string {
	if d.Name != "" {
		return d.Name
	}
	return d.Provider
}

// A Bedrock inference profile as ListInferenceProfiles and
// GetInferenceProfile give it (the bedrock control plane's
// InferenceProfileSummary and GetInferenceProfileOutput).
type inferenceProfile struct {
	Name        string         `json:"inferenceProfileName"`
	Description string         `json:"description"`
	ARN         string         `json:"inferenceProfileArn"`
	Models      []profileModel `json:"models"`
	ID          string         `json:"inferenceProfileId"`
	Status      string         `json:"status"`
	Type        string         `json:"type"`

	model string // the configured model it stands for
}

type profileModel struct {
	ARN string `json:"modelArn"`
}

// profilePrefixes are the prefixes of Bedrock's cross-region profiles
// (us.anthropic.…), each with a region of its geography for the ARNs:
// Claude Code takes its own (us-gov, us, eu, apac, else global: from
// AWS_REGION, or ANTHROPIC_BEDROCK_REGION_PREFIX) first.
var profilePrefixes = []struct{ prefix, region string }{
	{"us", "us-east-1"}, {"us-gov", "us-gov-west-1"}, {"eu", "eu-central-1"}, {"apac", "ap-northeast-1"}, {"global", "us-east-1"},
}

// profiles are the inference profiles the gateway lists: for each
// configured model of Anthropic's (the built-in catalog's the
// configuration keeps among them), in the order of their names, one id
// for each of Bedrock's prefixes (us., eu., …): a Bedrock deployment's
// own id of that prefix when the model has one (its ARN's profile id),
// else PREFIX.anthropic.MODEL; and a Bedrock deployment's id of no known
// prefix (anthropic.… , a foundation model's) as well. Each id contains
// "anthropic" (Claude Code keeps only those) and maps back to its model
// (CloudModel): an id that would map to another is left out.
//
// Claude Code picks, for each of its tiers, the first id that has its
// region's prefix and its model's name (claude-sonnet-5-5, followed by no
// further version number), else the first that has the name: with one id
// per prefix per model, the one it picks is the model's, of its region.
func profiles(cfg *config.Config) []inferenceProfile {
	names := make([]string, 0, len(cfg.Models))
	for n := range cfg.Models {
		if cfg.ModelType(n) == messagesEP.Format { // (a model that speaks Messages: Anthropic's)
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []inferenceProfile
	seen := map[string]bool{}
	add := func(model, id, region string) bool {
		if seen[id] || !strings.Contains(id, "anthropic") {
			return false
		}
		if m, ok := cfg.CloudModel(id); !ok || m != model {
			return false
		}
		seen[id] = true
		out = append(out, profileOf(model, id, region))
		return true
	}
	for _, model := range names {
		has := map[string]bool{}
		for _, d := range cfg.Deployments(model) {
			prov := cfg.Providers[d.Provider]
			if prov.Type != config.Bedrock {
				continue
			}
			id := profileID(d.Upstream)
			if add(model, id, prov.Region) {
				has[prefixOf(id)] = true
			}
		}
		for _, p := range profilePrefixes {
			if !has[p.prefix] {
				add(model, p.prefix+".anthropic."+model, p.region)
			}
		}
	}
	return out
}

// profileOf is the inference profile id, which stands for model, in
// region (of its ARNs; the account is none of the client's business).
func profileOf(model, id, region string) inferenceProfile {
	foundation := id
	if pre := prefixOf(id); pre != "" {
		foundation = strings.TrimPrefix(id, pre+".")
	}
	if !strings.HasPrefix(foundation, "anthropic.") {
		foundation = "anthropic." + foundation
	}
	what := "cross-region"
	if pre := prefixOf(id); pre != "" {
		what = strings.ToUpper(pre)
	}
	return inferenceProfile{
		Name:        fmt.Sprintf("spillway %s %s", what, model),
		Description: fmt.Sprintf("spillway's model %s: a request to this profile walks the model's chain at the gateway", model),
		ARN:         "arn:aws:bedrock:" + region + ":000000000000:inference-profile/" + id,
		Models:      []profileModel{{ARN: "arn:aws:bedrock:" + region + "::foundation-model/" + foundation}},
		ID:          id,
		Status:      "ACTIVE",
		Type:        "SYSTEM_DEFINED",
		model:       model,
	}
}

// profileID is a Bedrock model id without an ARN's dressing: the id after
// an ARN's resource type (inference-profile/ID, foundation-model/ID).
func profileID(id string) string {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndex(id, "/"); i >= 0 {
			return id[i+1:]
		}
	}
	return id
}

// prefixOf is the prefix of a cross-region profile id (us of
// us.anthropic.…); "" for another id.
func prefixOf(id string) string {
	pre, rest, ok := strings.Cut(id, ".")
	if !ok || pre == "anthropic" || !strings.HasPrefix(rest, "anthropic.") {
		return ""
	}
	return pre
}

// maxProfiles is ListInferenceProfiles' largest page (its maxResults).
const maxProfiles = 1000

// inferenceProfiles answers Bedrock's ListInferenceProfiles (GET
// /bedrock/inference-profiles?type=SYSTEM_DEFINED, the bedrock control
// plane's API; Claude Code asks it first in its Bedrock mode): the
// profiles of the configured models (profiles), a page of maxResults
// from nextToken (an offset). type=APPLICATION lists none: the gateway
// has no application profiles.
func (s *Server) inferenceProfiles(w http.ResponseWriter, r *http.Request) {
	cfg := s.stateOf(r.Context()).cfg
	q := r.URL.Query()
	var all []inferenceProfile
	switch t := q.Get("type"); t {
	case "", "SYSTEM_DEFINED":
		key := keyIn(r)
		all = slices.DeleteFunc(profiles(cfg), func(p inferenceProfile) bool {
			_, ok := allowed(cfg, key, p.model)
			return !ok // a key lists the models of its chains only
		})
	case "APPLICATION":
	default:
		reject(w, messagesEP, http.StatusBadRequest, fmt.Sprintf("spillway: type %q is not SYSTEM_DEFINED or APPLICATION", t))
		return
	}
	size := maxProfiles
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxProfiles {
			reject(w, messagesEP, http.StatusBadRequest, fmt.Sprintf("spillway: maxResults %q is not a number from 1 to %d", v, maxProfiles))
			return
		}
		size = n
	}
	from := 0
	if v := q.Get("nextToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > len(all) {
			reject(w, messagesEP, http.StatusBadRequest, fmt.Sprintf("spillway: nextToken %q is not one this gateway gave (the list may have changed with a reload: list again)", v))
			return
		}
		from = n
	}
	page := struct {
		Summaries []inferenceProfile `json:"inferenceProfileSummaries"`
		NextToken string             `json:"nextToken,omitempty"`
	}{Summaries: all[from:min(from+size, len(all))]}
	if page.Summaries == nil {
		page.Summaries = []inferenceProfile{}
	}
	if from+size < len(all) {
		page.NextToken = strconv.Itoa(from + size)
	}
	writeJSON(w, http.StatusOK, page)
}

// inferenceProfile answers Bedrock's GetInferenceProfile (GET
// /bedrock/inference-profiles/{id}; the id a profile's, or its ARN): the
// listed profile of that id, or one made for the configured model the id
// names (CloudModel), its backing model's ARN ending in the model's
// foundation id (Claude Code reads it after the last "/"). An id of no
// configured model of Anthropic's is Bedrock's 404
// ResourceNotFoundException.
func (s *Server) inferenceProfile(w http.ResponseWriter, r *http.Request) {
	cfg := s.stateOf(r.Context()).cfg
	given := r.PathValue("id")
	if given == "" {
		given = r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	}
	id := profileID(given)
	model, ok := cfg.CloudModel(given)
	if _, mine := allowed(cfg, keyIn(r), model); !ok || !mine || cfg.ModelType(model) != messagesEP.Format {
		refuse(w, messagesEP, http.StatusNotFound, classify.ModelNotFound, fmt.Sprintf("spillway: no configured model of Anthropic's answers to inference profile %q (GET /bedrock/inference-profiles lists the ids)", given), 0)
		return
	}
	for _, p := range profiles(cfg) {
		if p.ID == id {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	region := "us-east-1"
	for _, p := range profilePrefixes {
		if p.prefix == prefixOf(id) {
			region = p.region
		}
	}
	writeJSON(w, http.StatusOK, profileOf(model, id, region))
}
