package routing

import "net/http"

// Results of an upstream attempt, for its log line and for the attempt
// metric (upstream.Observer).
const (
	// AttemptOK is an answer with a 1xx, 2xx or 3xx status.
	AttemptOK = "ok"
	// AttemptStatus4xx is an answer with a 4xx status other than 429.
	AttemptStatus4xx = "status_4xx"
	// AttemptStatus429 is an answer with status 429.
	AttemptStatus429 = "status_429"
	// AttemptStatus5xx is an answer with a 5xx status.
	AttemptStatus5xx = "status_5xx"
	// AttemptConnectError is no answer: the connection failed.
	AttemptConnectError = "connect_error"
	// AttemptTimeout is no answer within the provider's timeout.
	AttemptTimeout = "timeout"
	// AttemptCanceled is a client that left before the answer.
	AttemptCanceled = "canceled"
)

// StatusResult is the attempt result of an answer with status.
func StatusResult(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return AttemptStatus429
	case status >= 500:
		return AttemptStatus5xx
	case status >= 400:
		return AttemptStatus4xx
	}
	return AttemptOK
}
