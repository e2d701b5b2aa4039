package transport_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/transport"
)

// An upstream that ends a started stream cleanly but without its final
// event: the caller's read must fail, never look like a complete answer.
func TestCleanlyCutStreamIsAnError(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
		fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"half\"}\n\n")
	}))
	defer up.Close()
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 4}
	client := &http.Client{Transport: transport.New(cfg)}
	resp, err := client.Post(up.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-6-luna","stream":true,"input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(string(b), "half") {
		t.Fatalf("read %q, err %v; want the output so far and io.ErrUnexpectedEOF", b, err)
	}
}
