package tasks

import (
	"mime"
	"strings"
)

// octetStream is the type of re-hosted media of any type outside
// safeMediaTypes: a download, never rendered.
const octetStream = "application/octet-stream"

// safeMediaTypes are the types media are stored and served under as they
// are: raster images and videos, which a browser shows without running
// anything. SVG (which may hold script), HTML, text and the rest are
// stored as octetStream, so that a provider cannot serve a page on the
// gateway's origin, which is the console's.
var safeMediaTypes = map[string]bool{
	"image/png":       true,
	"image/jpeg":      true,
	"image/gif":       true,
	"image/webp":      true,
	"image/avif":      true,
	"video/mp4":       true,
	"video/webm":      true,
	"video/quicktime": true,
}

// SafeMediaType returns the media type of the Content-Type ct, without
// parameters, and true when it is one re-hosted media may be served as;
// octetStream and false otherwise.
func SafeMediaType(ct string) (string, bool) {
	t, _, err := mime.ParseMediaType(ct)
	if err != nil || !safeMediaTypes[strings.ToLower(t)] {
		return octetStream, false
	}
	return strings.ToLower(t), true
}
