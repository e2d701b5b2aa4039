package config

// Auth is whose credentials a provider's requests carry: the client's own
// (AuthPassthrough, the default) or the provider's api_key (AuthKey). A
// configuration with gateway.keys sets every provider but the sign-ins to
// AuthKey: its clients send gateway keys, never a provider's.
type Auth string

// The ways a provider's requests are authenticated (auth: in the file).
const (
	// AuthPassthrough sends the client's own key (or sign-in) on.
	AuthPassthrough Auth = "passthrough"
	// AuthKey replaces the client's credentials with the provider's api_key,
	// in its wire format's header or in key_header.
	AuthKey Auth = "key"
)
