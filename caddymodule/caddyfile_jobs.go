package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func (a *App) parseTasks(d *caddyfile.Dispenser) error {
	a.Tasks = &TasksConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "ttl":
			a.Tasks.TTL, err = parseDuration(d)
		case "media_ttl":
			a.Tasks.MediaTTL, err = parseDuration(d)
		case "poll_interval":
			a.Tasks.PollInterval, err = parseDuration(d)
		case "max_concurrent_creates":
			a.Tasks.MaxConcurrentCreates, err = parsePositiveInt(d)
		case "lease":
			a.Tasks.Lease, err = parseDuration(d)
		case "media_fetch_allow":
			allow := d.RemainingArgs()
			if len(allow) == 0 {
				return d.ArgErr()
			}
			a.Tasks.MediaFetchAllow = append(a.Tasks.MediaFetchAllow, allow...)
		default:
			return d.Errf("unrecognized tasks option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseResponses reads the `responses { … }` block of the air option.
func (a *App) parseResponses(d *caddyfile.Dispenser) error {
	a.Responses = &ResponsesConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "poll_interval":
			a.Responses.PollInterval, err = parseDuration(d)
		case "max_poll_interval":
			a.Responses.MaxPollInterval, err = parseDuration(d)
		case "max_age":
			a.Responses.MaxAge, err = parseDuration(d)
		case "lease":
			a.Responses.Lease, err = parseDuration(d)
		default:
			return d.Errf("unrecognized responses option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseBatches reads the `batches { … }` block of the air option.
func (a *App) parseBatches(d *caddyfile.Dispenser) error {
	a.Batches = &BatchesConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "max_file_size":
			a.Batches.MaxFileSize, err = parseSize(d)
		case "max_files":
			a.Batches.MaxFiles, err = parsePositiveInt(d)
		case "file_ttl":
			a.Batches.FileTTL, err = parseDuration(d)
		case "max_lines":
			a.Batches.MaxLines, err = parsePositiveInt(d)
		case "poll_interval":
			a.Batches.PollInterval, err = parseDuration(d)
		case "lease":
			a.Batches.Lease, err = parseDuration(d)
		default:
			return d.Errf("unrecognized batches option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if err := a.Batches.validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}
