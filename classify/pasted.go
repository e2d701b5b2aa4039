package classify

import (
	"bufio"
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
)

// statusLineRe is the status line of an HTTP answer as curl -i and
// proxies' logs print it: "HTTP/1.1 429 Too Many Requests", "HTTP/2 503".
var statusLineRe = regexp.MustCompile(`^HTTP/\d(?:\.\d)?\s+(\d{3})\b`)

// pastedAnswer reads a whole HTTP answer pasted as text (curl -i, a
// saved response): its status, its headers (added to h, which wins) and
// its body, everything after the first blank line, taken as it is. The
// body is not decoded by its framing headers: a paste shows it decoded
// whatever Transfer-Encoding or Content-Length says, so net/http's reader,
// which obeys them, would refuse or cut it.
func pastedAnswer(text string, h http.Header) (int, http.Header, []byte, bool) {
	m := statusLineRe.FindStringSubmatch(text)
	if m == nil {
		return 0, nil, nil, false
	}
	status, _ := strconv.Atoi(m[1])
	head, body := text, ""
	for _, sep := range []string{"\r\n\r\n", "\n\n"} {
		if i := strings.Index(text, sep); i >= 0 && (len(head) == len(text) || i < len(head)) {
			head, body = text[:i], text[i+len(sep):]
		}
	}
	r := textproto.NewReader(bufio.NewReader(strings.NewReader(head + "\r\n\r\n")))
	if _, err := r.ReadLine(); err != nil { // the status line
		return 0, nil, nil, false
	}
	mh, err := r.ReadMIMEHeader()
	if err != nil && len(mh) == 0 {
		mh = nil // a header block it cannot read: the status and the body still tell
	}
	hh := http.Header(mh)
	if hh == nil {
		hh = http.Header{}
	}
	for k, vs := range h {
		hh[k] = vs
	}
	return status, hh, []byte(strings.TrimSpace(body)), true
}
