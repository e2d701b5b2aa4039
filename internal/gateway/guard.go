package gateway

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/formats"
)

// guard is what every request to the gateway passes first (its API, the
// dashboard, /spillway/*, /metrics): the browser rules.
//
// A web page the user visits can send the gateway requests: a form post
// to /v1/chat/completions spends the user's key on loopback, and a name
// of the page's that resolves to 127.0.0.1 (DNS rebinding) makes its
// script same-origin with the gateway. So on loopback the gateway answers
// only to loopback names in Host, and everywhere it refuses what a page of
// another origin asks (the browser says so in Sec-Fetch-Site and Origin),
// but following a link to the dashboard. Clients that are not browsers
// send neither header.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := s.refusal(r); why != "" {
			body := formats.WireOf(formatOf(r)).StatusBody(http.StatusForbidden, "spillway: "+why)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusForbidden)
			w.Write(body)
			s.log.Info("request", "endpoint", r.URL.Path, "outcome", "refused", "status", http.StatusForbidden, "why", why)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// refusal says why the browser rules refuse r, "" when they let it in.
func (s *Server) refusal(r *http.Request) string {
	cfg := s.conf()
	host := hostName(r.Host)
	listed := slices.ContainsFunc(cfg.Gateway.AllowedHosts, func(h string) bool { return strings.EqualFold(h, host) })
	switch {
	case loopbackName(host) || listed:
	case !s.exposed.Load():
		return "this gateway listens on loopback and answers only to 127.0.0.1, localhost, [::1] or a name in gateway.allowed_hosts in Host, not " + quoteHost(r.Host) + " (a name that resolves here, as DNS rebinding makes one)"
	case len(cfg.Gateway.AllowedHosts) > 0:
		return quoteHost(r.Host) + " is not a name of this gateway (gateway.allowed_hosts)"
	}
	if navigation(r) {
		return "" // a link to the dashboard, from anywhere
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" && !allowedOrigin(cfg, r) {
		return "a web page of another site may not use this gateway (Sec-Fetch-Site: " + site + "); list its origin in gateway.allowed_origins if it should"
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) && !allowedOrigin(cfg, r) {
		return "a web page of origin " + quoteHost(origin) + " may not use this gateway; list it in gateway.allowed_origins if it should"
	}
	return ""
}

// navigation reports a browser opening the dashboard's page: a GET of /
// or /ui/ that is a navigation (or says nothing of its mode).
func navigation(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.URL.Path != "/" && r.URL.Path != "/ui/" {
		return false
	}
	mode := r.Header.Get("Sec-Fetch-Mode")
	return mode == "" || mode == "navigate"
}

// allowedOrigin reports an Origin listed in gateway.allowed_origins.
func allowedOrigin(cfg *config.Config, r *http.Request) bool {
	origin := strings.TrimSuffix(r.Header.Get("Origin"), "/")
	return origin != "" && slices.ContainsFunc(cfg.Gateway.AllowedOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
	})
}

// sameOrigin reports an Origin that is the gateway's own: its host and
// port are the ones the request was sent to.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
}

// hostName is the name of a Host header, without its port or brackets.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// loopbackName reports a loopback name: localhost, or an address of
// 127.0.0.0/8 or ::1.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quoteHost quotes what a client sent, cut short.
func quoteHost(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
