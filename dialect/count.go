package dialect

import "net/http"

// Counter is how a cloud protocol's provider counts a request's tokens
// (Google's countTokens), for a Messages client's count_tokens: the
// request is encoded as for generating, then Body, Path and Read make
// the count's exchange of it.
type Counter struct {
	// Body returns the count request of generate, a request encoded in
	// the protocol, for the upstream model.
	Body func(generate []byte, model string) ([]byte, error)
	// Path returns the count's URL path of a generating request's path,
	// false when path is not one.
	Path func(path string) (string, bool)
	// Read reads the count from an answer, false when it holds none.
	Read func(answer []byte) (int64, bool)
	// Error reads a refused count's answer.
	Error func(status int, h http.Header, body []byte) *Error
}
