package caddymodule

import "github.com/caddyserver/caddy/v2"

// TasksConfig tunes the task service.
type TasksConfig struct {
	// TTL is how long tasks can be queried. Default: 24h.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// MediaTTL is how long re-hosted images and videos are served.
	// Default: 24h.
	MediaTTL caddy.Duration `json:"media_ttl,omitempty"`
	// PollInterval is the base interval between two upstream polls of a
	// running video task. Default: 5s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// MaxConcurrentCreates bounds the task creates that wait on a provider
	// at once, per config: an image create until its images are stored, a
	// video create until the provider accepted the job. Beyond it, creates
	// get 503 with code server_overloaded and Retry-After, before any
	// provider is contacted. Default: 64.
	MaxConcurrentCreates int `json:"max_concurrent_creates,omitempty"`
	// Lease is how long an instance owns a task it claimed to poll: the
	// time within which no other instance (or the next run of this one)
	// polls it, and after which a task whose instance died is taken over.
	// It must exceed a poll's upstream timeout. Default: 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
	// MediaFetchAllow lists further destinations the generated files a
	// provider names may be downloaded from, each a CIDR range ("10.8.0.0/16"),
	// an address, or a host:port ("media.internal:9000"). Without it a
	// download connects only to the host:port of one of the task's
	// provider's base URLs, or to public unicast addresses; loopback,
	// private, link-local, CGNAT and other non-public addresses are
	// refused when dialed, and the task fails unbilled.
	MediaFetchAllow []string `json:"media_fetch_allow,omitempty"`
}
