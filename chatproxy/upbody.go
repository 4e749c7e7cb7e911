package chatproxy

import "github.com/caddy-air/caddy-air/bodypin"

// Pinner counts the holders of a request body's memory.
type Pinner = bodypin.Pinner

// newBodyReader returns a reader of b that holds a pin of pin, if any,
// from its making until its first Close.
func newBodyReader(b []byte, pin Pinner) *bodypin.Reader { return bodypin.NewReader(pin, b) }
