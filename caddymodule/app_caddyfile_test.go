package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestTasksCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    int
		wantErr bool
	}{
		{"air {\n tasks {\n max_concurrent_creates 8\n }\n}", 8, false},
		{"air {\n tasks {\n ttl 1h\n }\n}", 0, false},
		{"air {\n tasks {\n max_concurrent_creates 0\n }\n}", 0, true},
		{"air {\n tasks {\n max_concurrent_creates many\n }\n}", 0, true},
		{"air {\n tasks {\n max_concurrent_creates 1 2\n }\n}", 0, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && a.Tasks.MaxConcurrentCreates != tc.want {
			t.Errorf("Test %d: max_concurrent_creates = %d, want %d", i, a.Tasks.MaxConcurrentCreates, tc.want)
		}
	}
}

func TestTasksMediaFetchAllowCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    []string
		wantErr bool
	}{
		{"air {\n tasks {\n media_fetch_allow 10.8.0.0/16 media.internal:9000\n media_fetch_allow fd00::1\n }\n}", []string{"10.8.0.0/16", "media.internal:9000", "fd00::1"}, false},
		{"air {\n tasks {\n media_fetch_allow\n }\n}", nil, true},
		{"air {\n tasks {\n media_fetch_allow media.internal\n }\n}", nil, true},
		{"air {\n tasks {\n media_fetch_allow 10.0.0.0/40\n }\n}", nil, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil && tc.wantErr {
			err = loadCaddyfile(tc.input) // refused when loaded, not parsed
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && strings.Join(a.Tasks.MediaFetchAllow, " ") != strings.Join(tc.want, " ") {
			t.Errorf("Test %d: media_fetch_allow = %q, want %q", i, a.Tasks.MediaFetchAllow, tc.want)
		}
	}
}

func TestTasksLeaseCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    time.Duration
		wantErr bool
	}{
		{"air {\n tasks {\n lease 10s\n }\n}", 10 * time.Second, false},
		{"air {\n tasks {\n ttl 1h\n }\n}", 0, false}, // Provision applies the default
		{"air {\n tasks {\n lease 0s\n }\n}", 0, true},
		{"air {\n tasks {\n lease soon\n }\n}", 0, true},
		{"air {\n tasks {\n lease\n }\n}", 0, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && time.Duration(a.Tasks.Lease) != tc.want {
			t.Errorf("Test %d: lease = %v, want %v", i, time.Duration(a.Tasks.Lease), tc.want)
		}
	}
}

func TestModelTranslationOptionsCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input     string
		drop      bool
		maxTokens int64
		wantErr   bool
	}{
		{"air {\n model m p {\n drop_params\n max_output_tokens 64000\n }\n}", true, 64000, false},
		{"air {\n model m p\n}", false, 0, false},
		{"air {\n model m p {\n drop_params yes\n }\n}", false, 0, true},
		{"air {\n model m p {\n max_output_tokens 0\n }\n}", false, 0, true},
		{"air {\n model m p {\n max_output_tokens lots\n }\n}", false, 0, true},
		{"air {\n model m p {\n max_tokens 100\n }\n}", false, 0, true}, // one knob: max_output_tokens
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && (a.Models[0].DropParams != tc.drop || int64(a.Models[0].MaxOutputTokens) != tc.maxTokens) {
			t.Errorf("Test %d: drop_params %t, max_output_tokens %d", i, a.Models[0].DropParams, a.Models[0].MaxOutputTokens)
		}
	}
}
