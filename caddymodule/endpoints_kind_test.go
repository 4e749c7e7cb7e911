package caddymodule

import (
	"testing"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
)

// TestKindRoutes checks the routes the modules register for the model
// kinds they serve, named in the error of a model sent to another
// endpoint, and the metrics endpoint registered by air_moderations.
func TestKindRoutes(t *testing.T) {
	for kind, want := range map[string]string{
		providers.KindChat:          "POST /v1/chat/completions",
		providers.KindMessages:      "POST /v1/messages",
		providers.KindImage:         "POST /v1/tasks",
		providers.KindVideo:         "POST /v1/tasks",
		providers.KindEmbedding:     "POST /v1/embeddings",
		providers.KindModeration:    "POST /v1/moderations",
		providers.KindSpeech:        "POST /v1/audio/speech",
		providers.KindTranscription: "POST /v1/audio/transcriptions",
		providers.KindRerank:        "POST /v1/rerank",
	} {
		if got := gateway.EndpointFor(kind); got != want {
			t.Errorf("kind %s: served by %q, want %q", kind, got, want)
		}
	}
	for _, name := range []string{"moderations", "/v1/moderations", "/v1/moderations/"} {
		if got := airmetrics.Endpoint(name); got != "moderations" {
			t.Errorf("metrics endpoint of %q: %q, want moderations", name, got)
		}
	}
}
