package responses

import (
	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

var ep = wire.EndpointOf(wire.Responses)

func (Format) Look(ev sse.Event) wire.Facts        { return wire.KindLook(ep.Kind, ev) }
func (Format) OnceStarted(f wire.Facts) wire.Frame { return f.OnceStarted(ep.Kind) }
func (Format) TakesComments() bool                 { return true }
func (Format) ErrorBody(class classify.Class, msg string) (int, []byte) {
	return wire.ErrorBody(ep, class, msg)
}
func (Format) StatusBody(status int, msg string) []byte { return wire.StatusBody(ep, status, msg) }
func (Format) BusyBody(msg string) (int, []byte)        { return wire.BusyBody(ep, msg) }
func (Format) StreamErrorFrame(class classify.Class, msg string, r wire.Responding) []byte {
	return wire.StreamErrorFrame(ep, class, msg, r)
}
func (Format) GiveUpFrame(class classify.Class, msg string, r wire.Responding) []byte {
	return wire.GiveUpFrame(ep, class, msg, r)
}
func (Format) Prompt(p wire.Prompt, model string) []byte { return p.Body(ep, model) }

func (Format) Seen(r *wire.Responding, ev sse.Event, fa wire.Facts) { r.Note(ev.Name, ev.Data, fa) }
func (Format) Continues() bool                                      { return false }
