package config

import "strings"

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
