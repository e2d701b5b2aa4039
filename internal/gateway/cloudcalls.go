package gateway

import "net/http"

// The calls a cloud client makes besides the model's (Claude Code in its
// Bedrock and Vertex AI modes): token counts, and Bedrock's inference
// profiles. w is already the cloud's answer (bedrock.Answer,
// vertex.Answer): an error written in Messages' shape goes out in the
// cloud's.

// cloudCount answers a token count of a cloud client (Bedrock's
// POST /bedrock/model/{id}/count-tokens, Vertex AI's
// …/publishers/anthropic/models/count-tokens:rawPredict) for model, a
// configured model (CloudModel). countFor (clouds.go) has checked the
// gateway key and that the key may use model, dropped the client's
// credentials, and left the body (read within gateway.max_body_mb) in
// r.Body to read again: TODO(helper B).
func (s *Server) cloudCount(w http.ResponseWriter, r *http.Request, cloud, model string) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}

// inferenceProfiles answers Bedrock's ListInferenceProfiles (GET
// /bedrock/inference-profiles): TODO(helper B).
func (s *Server) inferenceProfiles(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}

// inferenceProfile answers Bedrock's GetInferenceProfile (GET
// /bedrock/inference-profiles/{id}): TODO(helper B).
func (s *Server) inferenceProfile(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}
