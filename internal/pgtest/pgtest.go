// Package pgtest gives a test a schema of its own in the test Postgres
// (127.0.0.1:5432, db test, or $SPILLWAY_TEST_POSTGRES), dropped when the
// test ends: the queue's store suite, the fleet's conformance suite and
// the CLI's multi-runner tests share it. Without Postgres the test says it
// was skipped; in CI (CI=true) it fails.
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema creates a schema for t and returns the server's URL, the
// schema's name, and the URL with the schema as its search_path.
func Schema(t testing.TB) (url, schema, schemaURL string) {
	t.Helper()
	url = os.Getenv("SPILLWAY_TEST_POSTGRES")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Postgres is required in CI: %v", err)
		}
		t.Skipf("SKIPPED: Postgres test (no server at %s: %v)", url, err)
	}
	schema = fmt.Sprintf("spillway_test_%d_%d", time.Now().UnixNano(), rand.IntN(1<<30))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	return url, schema, url + "&search_path=" + schema
}
