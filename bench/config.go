package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// benchModel is the model every request asks for; caddy-air routes it to
// the mock provider and prices it.
const benchModel = "mock-gpt"

// translatedModel is served by the mock's Messages API: a chat
// completions request for it is translated (scenario translate).
const translatedModel = "mock-claude"

// upstreamKey is the API key the mock provider expects. Bare Caddy's
// clients send it themselves; caddy-air sends it in place of the client's
// sk-air- key.
const upstreamKey = "bench-upstream-key"

// pricesJSON prices benchModel so that caddy-air bills every request.
const pricesJSON = `{
  "currency": "USD",
  "models": {
    "` + benchModel + `": {
      "tiers": [
        {"up_to": 32000, "input": "0.80", "output": "2.00"},
        {"input": "2.40", "output": "9.60"}
      ]
    },
    "` + translatedModel + `": {"tiers": [{"input": "0.80", "output": "2.00"}]},
    "` + mediaModel + `": {"video_second": "0.10"}
  }
}
`

// globalOptions are the global options both Caddy processes share:
// loopback admin, logs at WARN and above, no config autosave.
const globalOptions = `	admin 127.0.0.1:%d
	persist_config off
	grace_period 2s
	log {
		level WARN
	}
`

// bareCaddyfile is bare Caddy: a reverse proxy to the upstream, and
// file_server on caddy-air's media directory (scenario 7), no access log.
func bareCaddyfile(adminPort, port, upstreamPort int, mediaDir string) string {
	return fmt.Sprintf("{\n"+globalOptions+"}\n\n"+`http://:%d {
	bind 127.0.0.1
	route /v1/* {
		reverse_proxy 127.0.0.1:%d
	}
	handle_path /media/* {
		root * %s
		file_server
	}
}
`, adminPort, port, upstreamPort, mediaDir)
}

// airCaddyfile is caddy-air: key authentication, the chat proxy with its
// usage tap, ledger and billing, tasks and their re-hosted media (scenario
// 7), state in the storage line's backend (storage is its arguments:
// "badger <dir>" or "postgres <dsn>"), no access log.
// extra is Caddyfile text added to its air block (the -air-options flag).
func airCaddyfile(adminPort, port, upstreamPort int, storage, pricesFile, extra string) string {
	return fmt.Sprintf("{\n"+globalOptions+`	air {
		`+extra+`
		storage %s
		prices %s
		provider mock {
			protocol openai
			base_url http://127.0.0.1:%d/v1
			api_key %s
		}
		provider mock-anthropic {
			protocol anthropic
			base_url http://127.0.0.1:%d/v1
			api_key %s
		}
		model %s mock
		model %s mock-anthropic
		model %s mock {
			kind video
		}
	}
}

http://:%d {
	bind 127.0.0.1
	route /v1/* {
		air_auth
		air_chat /v1/chat/completions
		air_tasks /v1/tasks*
	}
	route /media/* {
		air_media
	}
}
`, adminPort, storage, pricesFile, upstreamPort, upstreamKey, upstreamPort, upstreamKey, benchModel, translatedModel, mediaModel, port)
}

// writeFile writes content to name in dir and returns its path.
func writeFile(dir, name, content string) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(content), 0o600)
}
