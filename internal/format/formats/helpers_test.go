package formats

import (
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// newTurn is format.New with every format.
func newTurn(client wire.Endpoint, body []byte, to wire.Format, t format.Takes, model, upstream string) (*format.Turn, error) {
	return format.New(Registry{}, client, body, to, t, model, upstream)
}

// check is format.Check with every format.
func check(client wire.Endpoint, body []byte, to wire.Format, t format.Takes) error {
	return format.Check(Registry{}, client, body, to, t)
}
