package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestMediaPathDirectives: air_tasks and air_images parse media_path alike,
// refuse arguments and unknown options naming their own directive, and
// clean the path the same way at provision.
func TestMediaPathDirectives(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    string // MediaPath after cleanMediaPath
		wantErr string
	}{
		{input: "air_tasks", want: "/media"},
		{input: "air_images", want: "/media"},
		{input: "air_tasks {\n media_path /files/\n}", want: "/files"},
		{input: "air_images {\n media_path files\n}", want: "/files"},
		{input: "air_tasks extra", wantErr: "wrong argument count"},
		{input: "air_images {\n media_path\n}", wantErr: "wrong argument count"},
		{input: "air_tasks {\n color red\n}", wantErr: `unrecognized air_tasks option "color"`},
		{input: "air_images {\n color red\n}", wantErr: `unrecognized air_images option "color"`},
	} {
		var path string
		var err error
		d := caddyfile.NewTestDispenser(tc.input)
		if strings.HasPrefix(tc.input, "air_tasks") {
			h := new(Tasks)
			err, path = h.UnmarshalCaddyfile(d), h.MediaPath
		} else {
			h := new(Images)
			err, path = h.UnmarshalCaddyfile(d), h.MediaPath
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: err = %v, want %q", i, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		if got := cleanMediaPath(path); got != tc.want {
			t.Errorf("Test %d: media path %q, want %q", i, got, tc.want)
		}
	}
}
