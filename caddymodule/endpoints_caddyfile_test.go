package caddymodule

import (
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestModelFormatsCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		formats []string
		wantErr bool
	}{
		{"air {\n model tts-1 p {\n kind speech\n formats mp3 wav\n formats pcm\n }\n}", []string{"mp3", "wav", "pcm"}, false},
		{"air {\n model tts-1 p {\n kind speech\n }\n}", nil, false},
		{"air {\n model tts-1 p {\n formats\n }\n}", nil, true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && !slices.Equal(a.Models[0].Formats, tc.formats) {
			t.Errorf("Test %d: formats %v, want %v", i, a.Models[0].Formats, tc.formats)
		}
	}
}

func TestPassthroughCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    Passthrough
		wantErr string
	}{
		{"air_passthrough openai /openai", Passthrough{Provider: "openai", Prefix: "/openai"}, ""},
		{"air_passthrough jina /jina {\n bill_as jina-api\n usage_input usage.prompt_tokens\n usage_output usage.completion_tokens\n}",
			Passthrough{Provider: "jina", Prefix: "/jina", BillAs: "jina-api", UsageInput: "usage.prompt_tokens", UsageOutput: "usage.completion_tokens"}, ""},
		{"air_passthrough openai", Passthrough{}, "wrong argument count"},
		{"air_passthrough openai /a /b", Passthrough{}, "wrong argument count"},
		{"air_passthrough openai /a {\n price 1\n}", Passthrough{}, "unrecognized"},
		{"air_passthrough openai /a {\n bill_as\n}", Passthrough{}, "wrong argument count"},
	} {
		var h Passthrough
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: err %v, want one with %q", i, err, tc.wantErr)
		case tc.wantErr == "" && (h.Provider != tc.want.Provider || h.Prefix != tc.want.Prefix || h.BillAs != tc.want.BillAs ||
			h.UsageInput != tc.want.UsageInput || h.UsageOutput != tc.want.UsageOutput):
			t.Errorf("Test %d: %+v", i, h)
		}
	}
	for i, tc := range []struct {
		h  Passthrough
		ok bool
	}{
		{Passthrough{Provider: "p", Prefix: "/openai"}, true},
		{Passthrough{Provider: "p", Prefix: "openai"}, false},
		{Passthrough{Provider: "p", Prefix: "/openai/"}, false},
		{Passthrough{Prefix: "/openai"}, false},
	} {
		if err := tc.h.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate %d: %+v: %v", i, tc.h, err)
		}
	}
}

func TestAuthCaddyfile(t *testing.T) {
	var h Auth
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("air_auth {\n any_body\n}")); err != nil || !h.AnyBody {
		t.Fatalf("any_body: %v %+v", err, h)
	}
	for _, bad := range []string{"air_auth x", "air_auth {\n any_body yes\n}", "air_auth {\n keys\n}"} {
		var h Auth
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
