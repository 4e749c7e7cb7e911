// Package air plugs caddy-air into Caddy: importing it registers every
// caddy-air module (see imports.go). Build a Caddy with it using
//
//	xcaddy build --with github.com/caddy-air/caddy-air=.
//
// or simply `go build ./cmd/caddy` in this repository.
package air
