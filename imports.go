package air

import (
	// The air app, its handlers, admin API and commands.
	_ "github.com/caddy-air/caddy-air/caddymodule"

	// Storage backends (air.storage.*): a build that imports
	// caddymodule and only the backends it uses leaves the others out.
	_ "github.com/caddy-air/caddy-air/caddymodule/storage/badger"
	_ "github.com/caddy-air/caddy-air/caddymodule/storage/postgres"

	// Provider protocols (air.dialects.*): the clouds' packages bring
	// their SDKs (AWS, Google auth), which a narrower build leaves out.
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/azure"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/bedrock"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/gemini"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/keyed"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/vertex"
)
