package chatproxy

import (
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
)

// decodeBody undoes a gzip or deflate Content-Encoding of resp, which the
// gateway asked not to get (Accept-Encoding: identity) but some upstreams
// send all the same, so that the answer is read, tapped for its usage and
// bounded like any other, and forwarded plain, without the encoding's
// headers. It reports false for an encoding it cannot undo (br, zstd…):
// that body is passed through as it is, its usage estimated.
func decodeBody(resp *http.Response) bool {
	ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	var open func(io.Reader) (io.ReadCloser, error)
	switch ce {
	case "", "identity":
		return true
	case "gzip", "x-gzip":
		open = func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }
	case "deflate":
		open = zlib.NewReader
	default:
		return false
	}
	resp.Body = &decodedBody{raw: resp.Body, open: open}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	return true
}

// decodedBody decodes raw as it is read. The decoder starts on the first
// read, so that a body that is not what its encoding says fails that read
// (an upstream that broke its answer), not the exchange before it.
type decodedBody struct {
	raw  io.ReadCloser
	open func(io.Reader) (io.ReadCloser, error)
	dec  io.ReadCloser
}

// Read implements io.Reader.
func (d *decodedBody) Read(p []byte) (int, error) {
	if d.dec == nil {
		dec, err := d.open(d.raw)
		if err != nil {
			return 0, err
		}
		d.dec = dec
	}
	return d.dec.Read(p)
}

// Close closes the decoder and the raw body.
func (d *decodedBody) Close() error {
	if d.dec != nil {
		_ = d.dec.Close()
	}
	return d.raw.Close()
}
