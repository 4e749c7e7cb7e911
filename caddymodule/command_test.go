package caddymodule

import (
	"errors"
	"strings"
	"testing"
)

func TestAdminError(t *testing.T) {
	for i, tc := range []struct {
		err        error
		want       string
		notRunning bool
	}{
		{errors.New(`caddy responded with error: HTTP 400: {"error":"a key needs a user"}`), "a key needs a user", false},
		{errors.New(`caddy responded with error: HTTP 404: {"error":"no key with id \"key_x\""}`), `no key with id "key_x"`, false},
		{errors.New(`caddy responded with error: HTTP 502: upstream gone`), "admin API answered 502: upstream gone", false},
		{errors.New(`performing request: Post "http://localhost:2019/air/keys": dial tcp [::1]:2019: connect: connection refused`), "connection refused", true},
		{errors.New(`invalid admin address x: missing port`), "invalid admin address", false},
	} {
		got := adminError("localhost:2019", tc.err).Error()
		if !strings.Contains(got, tc.want) {
			t.Errorf("Test %d: %q, want it to contain %q", i, got, tc.want)
		}
		if running := strings.HasPrefix(got, "is caddy running?"); running != tc.notRunning {
			t.Errorf("Test %d: %q: asks whether caddy runs: %v, want %v", i, got, running, tc.notRunning)
		}
	}
}
