// Package send is how one attempt reaches a provider over HTTP and how its
// answer reaches the caller, for the gateway and the library (transport)
// alike: the three steps every HTTP front end takes together.
//
//   - upstream.go: the outgoing request (another model in the body or the
//     path, a translation for another vendor's model, the provider's
//     credentials), the exchange, a whole answer's judgement, room checks
//     and probes.
//   - relay.go, write.go, budget.go: the one stream relay. It reads an
//     upstream's event stream and judges each event once (an error event, a
//     frame that does not parse, usage, the final event, a stream that ends
//     or stalls before it), holds the opening events until the first real
//     output (and a hold window on after it), splices a continuation's
//     stream onto the answer it continues, and writes the stream to the
//     caller, to an http.ResponseWriter (the gateway: Relay) or as a body to
//     read (the library: Body), with the route's last word just before the
//     final event: every choice of what the caller sees of a stream is made
//     here. What a request holds of its answers counts against one Budget.
//   - reply.go: what spillway says to a client in its own words: the
//     X-Spillway-* request options it reads (Asks), the route headers of an
//     answer and a stream's last words as SSE comments, and the answer of a
//     request it gave up on.
//
// The client's wire format and the candidate's are two values all the way
// through (Stream.client, Stream.from): a stream is judged in the format it
// comes in and written in the one the client speaks. For another vendor's
// model (Options.Turn) each event is translated as it comes
// (format.Stream), and the hold, the first-output judgement, the last
// word and the records are those of any stream.
package send
