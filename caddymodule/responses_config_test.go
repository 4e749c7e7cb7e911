package caddymodule

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestResponsesCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    ResponsesConfig
		wantErr bool
	}{
		{"air {\n responses {\n poll_interval 2s\n max_poll_interval 30s\n max_age 2h\n lease 45s\n }\n}",
			ResponsesConfig{PollInterval: dur(2 * time.Second), MaxPollInterval: dur(30 * time.Second), MaxAge: dur(2 * time.Hour), Lease: dur(45 * time.Second)}, false},
		{"air {\n responses {\n }\n}", ResponsesConfig{}, false},
		{"air {\n responses {\n poll_interval 0s\n }\n}", ResponsesConfig{}, true},
		{"air {\n responses {\n max_age forever\n }\n}", ResponsesConfig{}, true},
		{"air {\n responses {\n interval 1s\n }\n}", ResponsesConfig{}, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && *a.Responses != tc.want {
			t.Errorf("Test %d: responses = %+v, want %+v", i, *a.Responses, tc.want)
		}
	}
}

func TestResponsesLeaseValidated(t *testing.T) {
	for i, tc := range []struct {
		c       *ResponsesConfig
		wantErr bool
	}{
		{nil, false},
		{&ResponsesConfig{}, false},
		{&ResponsesConfig{Lease: dur(time.Minute)}, false},
		{&ResponsesConfig{Lease: dur(30 * time.Second)}, true},
		{&ResponsesConfig{MaxAge: dur(-time.Second)}, true},
	} {
		if err := tc.c.validate(); (err != nil) != tc.wantErr {
			t.Errorf("Test %d: validate = %v, want error %t", i, err, tc.wantErr)
		}
	}
}

// dur is d as a caddy.Duration.
func dur(d time.Duration) caddy.Duration { return caddy.Duration(d) }
