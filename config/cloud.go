package config

import (
	"regexp"
	"slices"
	"strings"
)

// The cloud provider types: a format (Messages, Gemini) carried in a
// cloud's own envelope, signed with the cloud's own credentials.
const (
	// Bedrock is Amazon Bedrock's InvokeModel, for Anthropic's models.
	Bedrock = "bedrock"
	// Vertex is Google Vertex AI: Anthropic's models (rawPredict) and
	// Gemini's (generateContent).
	Vertex = "vertex"
)

// Cloud is the cloud that carries p's requests (Bedrock, Vertex), "" for
// a vendor's own API.
func (p Provider) Cloud() string {
	if p.Type == Bedrock || p.Type == Vertex {
		return p.Type
	}
	return ""
}

// OwnCredentials reports whether p's requests can go with credentials of
// spillway's own rather than a caller's: an api_key that is set, or a
// cloud (whose credentials are always spillway's: the AWS default chain,
// Google's Application Default Credentials).
func (p Provider) OwnCredentials() bool { return p.APIKey.Value != "" || p.Cloud() != "" }

// CloudBaseURL is the endpoint of a cloud provider of type typ in region:
// Bedrock's runtime host of the region, Vertex AI's regional host (the
// global one for region global); "" for another type.
func CloudBaseURL(typ, region string) string {
	switch {
	case typ == Bedrock:
		return "https://bedrock-runtime." + region + ".amazonaws.com"
	case typ == Vertex && region == "global":
		return "https://aiplatform.googleapis.com"
	case typ == Vertex:
		return "https://" + region + "-aiplatform.googleapis.com"
	}
	return ""
}

// VertexPublisher is the Vertex AI publisher of model id upstream:
// "anthropic" for Claude models, "google" for Gemini's; "" for another.
func VertexPublisher(upstream string) string {
	switch {
	case strings.HasPrefix(upstream, "claude"):
		return "anthropic"
	case strings.HasPrefix(upstream, "gemini"):
		return "google"
	}
	return ""
}

// DeploymentType is the wire format deployment d speaks: its provider's,
// and for a cloud, the format the cloud carries for d's model (Bedrock:
// Anthropic's Messages; Vertex: Messages for Claude, Gemini's for Gemini).
func (c *Config) DeploymentType(d Deployment) Format {
	p, ok := c.Providers[d.Provider]
	if ok && p.Type == Vertex {
		switch VertexPublisher(d.Upstream) {
		case "anthropic":
			return Anthropic
		case "google":
			return Gemini
		}
		return ""
	}
	return c.ProviderType(d.Provider)
}

// BedrockVendor is the vendor's name of a Bedrock model id: the id of a
// foundation model (anthropic.claude-x-20250101-v1:0), of a cross-region
// inference profile (us.anthropic.…, global.anthropic.…) or of either's
// ARN, without the provider prefix and version suffix (claude-x-20250101).
// An id of none of these shapes is returned as it is.
func BedrockVendor(id string) string {
	if strings.HasPrefix(id, "arn:") {
		// arn:aws:bedrock:REGION:ACCOUNT:inference-profile/ID, or
		// …:foundation-model/ID
		if _, rest, ok := strings.Cut(id, "/"); ok {
			id = rest
		}
	}
	if pre, rest, ok := strings.Cut(id, "."); ok && pre != "anthropic" && strings.HasPrefix(rest, "anthropic.") {
		id = rest // us., eu., apac., global. …: a cross-region profile
	}
	id = strings.TrimPrefix(id, "anthropic.")
	return bedrockVersion.ReplaceAllString(id, "")
}

var (
	bedrockVersion = regexp.MustCompile(`-v\d+(:\d+)?$`)
	dateSuffix     = regexp.MustCompile(`-\d{8}$`)
)

// vendorName is the name id stands for at its vendor, without a cloud's
// dressing and a version: a Bedrock id's (BedrockVendor), a Vertex AI
// id's without its "@version". undated is it without a date suffix too.
func vendorName(id string) string {
	id, _, _ = strings.Cut(BedrockVendor(id), "@")
	return id
}

func undated(name string) string { return dateSuffix.ReplaceAllString(name, "") }

// CloudModel is the configured model a cloud client names by id (the
// model id of a Bedrock or Vertex AI path, unescaped), asked in this
// order, the first that answers winning:
//  1. the model called id;
//  2. the model one of whose deployments has the upstream id (of several,
//     the one called that id's vendor name, else the first by name);
//  3. the model called the id's vendor name (vendorName:
//     us.anthropic.claude-x-20250101-v1:0, its ARN and claude-x@20250101
//     stand for claude-x-20250101), then a model one of whose deployments'
//     ids stands for it;
//  4. the same without date suffixes (claude-x-20250101 and claude-x), by
//     name first, then by deployment.
//
// Among several models at one step, the first by name. False when none
// does.
func (c *Config) CloudModel(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	if _, ok := c.Models[id]; ok {
		return id, true
	}
	names := make([]string, 0, len(c.Models))
	for n := range c.Models {
		names = append(names, n)
	}
	slices.Sort(names)
	want := vendorName(id)
	var byID []string
	for _, n := range names {
		if slices.ContainsFunc(c.Deployments(n), func(d Deployment) bool { return d.Upstream == id }) {
			byID = append(byID, n)
		}
	}
	switch {
	case slices.Contains(byID, want):
		return want, true
	case len(byID) > 0:
		return byID[0], true
	}
	for _, same := range []func(string) string{func(s string) string { return s }, undated} {
		w := same(want)
		if w == "" {
			continue
		}
		for _, n := range names {
			if same(n) == w {
				return n, true
			}
		}
		for _, n := range names {
			if slices.ContainsFunc(c.Deployments(n), func(d Deployment) bool { return same(vendorName(d.Upstream)) == w }) {
				return n, true
			}
		}
	}
	return "", false
}
