// Command hostileup serves a hostile upstream (internal/hostile) on
// loopback, for scripts/hostile-rss: it prints its URL, then serves
// until killed.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/spillway/spillway/internal/hostile"
)

func main() {
	gen := flag.String("answer", "messages-text", "the hostile answer: messages-text, messages-tool, chat-tool or messages-oversized")
	path := flag.String("path", "/v1/messages", "the path that answers with it (every other path answers that its model is full)")
	mb := flag.Int("mb", 200, "the answer's size in MB (10^6 bytes), cut before its end")
	flag.Parse()
	g, ok := hostile.Gens[*gen]
	if !ok {
		names := make([]string, 0, len(hostile.Gens))
		for n := range hostile.Gens {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "hostileup: no answer %q; one of %s\n", *gen, strings.Join(names, ", "))
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostileup:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	err = http.Serve(ln, &hostile.Upstream{Path: *path, Gen: g, Size: *mb * 1000 * 1000})
	fmt.Fprintln(os.Stderr, "hostileup:", err)
	os.Exit(1)
}
