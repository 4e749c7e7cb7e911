package responses

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
)

// TestErrorType: a Responses client reads every error kind with its type
// and a code (a failed Response's error.code is never empty).
func TestErrorType(t *testing.T) {
	for k, want := range map[dialect.ErrorKind][2]string{
		dialect.ErrInvalidRequest: {"invalid_request_error", "invalid_request_error"},
		dialect.ErrAuthentication: {"authentication_error", "invalid_api_key"},
		dialect.ErrPermission:     {"permission_error", "permission_denied"},
		dialect.ErrNotFound:       {"not_found_error", "model_not_found"},
		dialect.ErrTooLarge:       {"invalid_request_error", "request_too_large"},
		dialect.ErrRateLimit:      {"rate_limit_error", "rate_limit_exceeded"},
		dialect.ErrOverloaded:     {"server_error", "overloaded"},
		dialect.ErrServer:         {"server_error", "server_error"},
		dialect.ErrTimeout:        {"upstream_error", "upstream_timeout"},
		dialect.ErrCut:            {"upstream_error", "upstream_cut"},
		"unknown":                 {"server_error", "server_error"},
	} {
		if typ, code := errorType(k); typ != want[0] || code != want[1] {
			t.Errorf("errorType(%s) = %s, %s; want %s, %s", k, typ, code, want[0], want[1])
		}
	}
}
