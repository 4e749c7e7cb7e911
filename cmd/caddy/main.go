// Command caddy is Caddy with the standard modules and caddy-air, the same
// program that `xcaddy build --with github.com/caddy-air/caddy-air=.`
// produces.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddy-air/caddy-air"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
