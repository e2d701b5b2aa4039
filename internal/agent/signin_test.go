package agent

import (
	"testing"

	"github.com/spillway/spillway/internal/redact"
)

func TestRedactJSONL(t *testing.T) {
	sec := redact.NewSecrets("acct-secret-77")
	cases := []struct{ name, in, want string }{
		{"session_meta's ids, the names' order kept",
			`{"type":"session_meta","payload":{"id":"s1","creator_account_id":"acct-secret-77","creator_user_id":"user-9","cwd":"/w"}}` + "\n",
			`{"type":"session_meta","payload":{"id":"s1","creator_account_id":"[redacted]","creator_user_id":"[redacted]","cwd":"/w"}}` + "\n"},
		{"deep, in arrays, any case; a null stays null; an id of no one else's is kept",
			`{"a":[{"Org_ID":5,"x":{"organization_id":"o"}}],"user_id":null,"thread_id":"t"}`,
			`{"a":[{"Org_ID":"[redacted]","x":{"organization_id":"[redacted]"}}],"user_id":null,"thread_id":"t"}`},
		{"a value that only looks like a name is not one", `["account_id","x"]` + "\r\n", `["account_id","x"]` + "\r\n"},
		{"a known secret elsewhere, and a line that is not JSON, kept but redacted",
			"{\"m\":\"for acct-secret-77\"}\nnot json acct-secret-77\n\n",
			"{\"m\":\"for [redacted]\"}\nnot json [redacted]\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(redactJSONL([]byte(c.in), sec)); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
