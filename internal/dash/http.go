package dash

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"time"
)

//go:embed ui
var assets embed.FS

// ui is the page's files: index.html, app.js, style.css.
var ui, _ = fs.Sub(assets, "ui")

// policyHeader keeps the page to its own origin: its script, style and
// stream come from the gateway, nothing else loads, and no other site
// frames it.
const policyHeader = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page at / and /ui/, its files under /ui/, the state
// as JSON at /ui/state and the live stream at /ui/events. The caller
// guards it (the admin key, and the gateway's browser rules: another
// site's page may not reach in) and routes only those paths to it.
func (b *Board) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", b.file("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /ui/{$}", b.file("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /ui/app.js", b.file("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /ui/style.css", b.file("style.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /ui/state", b.handleState)
	mux.HandleFunc("GET /ui/events", b.handleEvents)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "spillway dashboard: no such page; the dashboard is at / (files under /ui/)", http.StatusNotFound)
	})
	return mux
}

func (b *Board) file(name, ctype string) http.HandlerFunc {
	body, err := fs.ReadFile(ui, name)
	return func(w http.ResponseWriter, _ *http.Request) {
		if err != nil { // the build embeds every file: cannot happen
			http.Error(w, "spillway dashboard: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Content-Security-Policy", policyHeader)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		w.Write(body)
	}
}

// handleState is the state now, as JSON (what the page's stream starts
// with; for scripts and curl).
func (b *Board) handleState(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	st := b.State(ctx)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(st)
}

// writeWait bounds each write to a page: a page that stops reading is let
// go rather than kept.
const writeWait = 10 * time.Second

// handleEvents is a page's one stream: the state, then each attempt and
// model switch as they happen and the state every two seconds, until the
// page goes or the gateway stops.
func (b *Board) handleEvents(w http.ResponseWriter, r *http.Request) {
	p, why := b.join(remoteHost(r.RemoteAddr))
	if p == nil {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "spillway dashboard: "+why, http.StatusServiceUnavailable)
		return
	}
	defer b.leave(p)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	st := b.State(ctx)
	cancel()
	first := frame("state", st)
	b.has(p, st.heatVer)
	send := func(f []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
		if _, err := w.Write(f); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// the browser retries a dropped stream after this long
	if !send(append([]byte("retry: 2000\n\n"), first...)) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case f, ok := <-p.out:
			if !ok || !send(f) {
				return
			}
		}
	}
}

// remoteHost is a client's address without its port.
func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
