package classify

import "strings"

// cloudAdvice replaces the general words of explain with the cloud's own
// where the cloud changes what the failure means or what to do: a full
// pool there is a region's (spill to another region or cloud), a rate
// limit is the account's, project's or deployment's quota in that region
// (which the cloud raises on request), credentials are the cloud's.
// wait is the formatted wait, "" for none.
func (v *Verdict) cloudAdvice(wait string) {
	switch v.Provider {
	case Bedrock:
		v.bedrockAdvice(wait)
	case Vertex:
		v.vertexAdvice(wait)
	case Azure:
		v.azureAdvice(wait)
	}
}

// orWait is ", or wait W" when there is a wait.
func orWait(wait string) string {
	if wait == "" {
		return ""
	}
	return ", or wait " + wait
}

// after is " after W" when there is a wait.
func after(wait string) string {
	if wait == "" {
		return ""
	}
	return " after " + wait
}

func (v *Verdict) bedrockAdvice(wait string) {
	switch v.Class {
	case Capacity:
		v.Summary = "Amazon Bedrock's capacity for this model in this region is full (its on-demand pool is shared; this is not your account's quota)."
		v.Action = "Spill to the same model in another region (a cross-region inference profile, another bedrock provider) or another cloud" + orWait(wait) +
			"; spillway serve does it with the model's other deployments. Provisioned Throughput reserves capacity of your own."
		if strings.Contains(strings.ToLower(v.Code), "modelnotready") {
			v.Summary = "the model is not ready to serve requests in this region yet (ModelNotReadyException); it is Bedrock's side, not your account's quota."
		}
	case RateLimit:
		v.Summary = "your AWS account's Bedrock quota for this model in this region (requests or tokens per minute, or tokens per day) is used up; the model itself is fine."
		v.Action = "Slow down and retry" + after(wait) + ", or spill to another region, whose quota is separate (spillway does both); for more, ask AWS for a quota increase (Service Quotas, Amazon Bedrock)."
	case Auth:
		v.Action = "Check the AWS credentials spillway resolved (spillway doctor names their source: environment, profile, SSO or role) or the Bedrock API key; the IAM permissions bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream; access to this model in the Bedrock console; and this machine's clock (a signature more than five minutes off is refused)."
	case ModelNotFound:
		v.Action = "Check the deployment's upstream: a Bedrock model id, inference profile (us.…, eu.…, global.…) or ARN offered in this region; models served only through an inference profile refuse their bare id. spillway skips the deployment meanwhile."
	case Timeout:
		if strings.Contains(strings.ToLower(v.Code), "modeltimeout") {
			v.Summary = "the model took longer than Bedrock allows to process the request (ModelTimeoutException)."
		}
	}
}

func (v *Verdict) vertexAdvice(wait string) {
	switch v.Class {
	case Capacity:
		v.Summary = "Vertex AI's shared pay-as-you-go pool for this model in this region is full (not your project's quota; Google does not count it against its SLA)."
		v.Action = "Spill to the same model in another region (region: global spreads the load) or another cloud" + orWait(wait) +
			"; spillway serve does it with the model's other deployments. Provisioned Throughput reserves capacity of your own."
	case RateLimit:
		if strings.Contains(strings.ToLower(v.Message), "provisioned throughput") {
			v.Summary = "your project's Provisioned Throughput for this model is used up, and its endpoint rejects overages."
			v.Action = "Let overages run as pay-as-you-go (send no X-Vertex-AI-LLM-Request-Type: dedicated header), buy more GSUs, or spill to another deployment" + orWait(wait) + " (spillway spills)."
			return
		}
		v.Summary = "your Google Cloud project's Vertex AI quota for this model in this region is used up; the model itself is fine."
		v.Action = "Slow down and retry" + after(wait) + ", or spill to another region, whose quota is separate (spillway does both); for more, submit a quota increase request in the console (IAM & Admin, Quotas)."
	case Auth:
		v.Action = "Check the Google credentials spillway resolved (credentials_file, GOOGLE_APPLICATION_CREDENTIALS, or `gcloud auth application-default login`; spillway doctor names the source), the role Vertex AI User (roles/aiplatform.user) on the project, and that the model is enabled in Model Garden."
	case ModelNotFound:
		v.Action = "Check the deployment's upstream (a Vertex model id with its version, e.g. claude-sonnet-4@20250514) and that the model is offered in this region (or use region: global); spillway skips the deployment meanwhile."
	}
}

func (v *Verdict) azureAdvice(wait string) {
	switch v.Class {
	case Capacity:
		v.Summary = "Azure OpenAI has no capacity for this model in this region under the current load (its shared capacity, not your deployment's TPM)."
		v.Action = "Spill to a deployment of the same model in another region or to another provider" + orWait(wait) +
			"; spillway serve does it with the model's other deployments. A Provisioned (PTU) deployment reserves capacity of your own."
	case RateLimit:
		v.Summary = "the Azure OpenAI deployment's tokens-per-minute (TPM) or requests-per-minute (RPM) allocation is used up; the model itself is fine."
		v.Action = "Retry" + after(wait) + " as Azure asks (spillway waits for x-ms-retry-after-ms), raise the deployment's TPM in the Azure portal, or spread the load over deployments in other regions."
	case Auth:
		v.Action = "Check the key spillway sends in the api-key header (key_header: api-key) against the resource's keys, and that base_url names your resource (https://RESOURCE.openai.azure.com/…)."
	case ModelNotFound:
		v.Action = "Check the deployment name in base_url (Azure routes by deployment, not by model) and the api-version query; spillway skips the deployment meanwhile."
	case ContentFilter:
		v.Summary = "Azure's content filter (ResponsibleAIPolicyViolation) blocked this request or its answer."
		v.Action = "Rephrase the request, or review the deployment's content filter configuration in Azure AI Foundry; retrying it unchanged will be refused again."
	}
}
