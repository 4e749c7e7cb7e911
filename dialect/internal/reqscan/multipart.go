package reqscan

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/caddy-air/caddy-air/dialect"
	"mime"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caddy-air/caddy-air/apierror"
)

// maxFormValue bounds a form field other than the file.
const maxFormValue = 4 << 10

// InspectTranscription is openai.InspectTranscription.
func InspectTranscription(contentType string, body []byte) (dialect.Inspected, *apierror.Error) {
	var in dialect.Inspected
	parts, e := splitMultipart(contentType, body)
	if e != nil {
		return in, e
	}
	seen := map[string]bool{}
	var file *formPart
	for i := range parts {
		p := &parts[i]
		switch p.name {
		case "model", "file", "response_format", "stream":
		default:
			continue
		}
		if seen[p.name] {
			return in, repeated(p.name)
		}
		seen[p.name] = true
		if p.name == "file" {
			file = p
			continue
		}
		v := body[p.start:p.end]
		if len(v) > maxFormValue || !utf8.Valid(v) {
			return in, apierror.InvalidRequest(p.name, p.name+" must be a short text field")
		}
		switch p.name {
		case "model":
			in.Model, in.Located.Model = string(v), dialect.Span{At: p.start, End: p.end}
		case "response_format":
			in.Format = string(v)
		case "stream":
			b, err := strconv.ParseBool(string(v))
			if err != nil {
				return in, apierror.InvalidRequest("stream", "stream must be true or false")
			}
			in.Stream = b
		}
	}
	switch {
	case file == nil || file.filename == "":
		return in, apierror.InvalidRequest("file", "you must provide a file: a form part named file, with a filename")
	case file.end == file.start:
		return in, apierror.InvalidRequest("file", "the file is empty")
	case in.Model == "":
		return in, missingOr(false, "model", "")
	}
	if in.Format == "" {
		in.Format = "json"
	}
	// The audio is no prompt text: its duration estimates the request.
	audio := body[file.start:file.end]
	if in.AudioMillis = audioMillis(audio); in.AudioMillis == 0 {
		in.AudioMillis, in.AudioEstimated = int64(len(audio))*8/128, true
	}
	return in, nil
}

// PrepareMultipart is openai.PrepareMultipart.
func PrepareMultipart(body []byte, in dialect.Inspected, model string) []byte {
	if model == "" || model == in.Model || in.Located.Model.At == 0 {
		return body
	}
	out := make([]byte, 0, len(body)+len(model))
	out = append(out, body[:in.Located.Model.At]...)
	out = append(out, model...)
	return append(out, body[in.Located.Model.End:]...)
}

// formPart is one part of a multipart form: its field name, file name
// and where its content lies in the body.
type formPart struct {
	name, filename string
	start, end     int
}

// splitMultipart splits body into its parts at the delimiters of the
// boundary contentType names.
func splitMultipart(contentType string, body []byte) ([]formPart, *apierror.Error) {
	mt, params, err := mime.ParseMediaType(contentType)
	boundary := params["boundary"]
	if err != nil || mt != "multipart/form-data" || boundary == "" || len(boundary) > 70 {
		return nil, apierror.New(http.StatusUnsupportedMediaType, apierror.TypeInvalidRequest, "unsupported_media_type",
			"this endpoint takes 'Content-Type: multipart/form-data' with a boundary")
	}
	bad := func(msg string) *apierror.Error { return apierror.InvalidRequest("", "malformed multipart body: "+msg) }
	delim := []byte("--" + boundary)
	// The first delimiter opens the body, or ends a preamble on a line of
	// its own.
	i := 0
	if !bytes.HasPrefix(body, delim) {
		j := bytes.Index(body, append([]byte("\r\n"), delim...))
		if j < 0 {
			return nil, bad("no opening boundary")
		}
		i = j + 2
	}
	next := append([]byte("\r\n"), delim...)
	var parts []formPart
	for {
		i += len(delim)
		if bytes.HasPrefix(body[i:], []byte("--")) {
			return parts, nil // the close delimiter: the epilogue is ignored
		}
		// Transport padding, then the line break before the headers.
		for i < len(body) && (body[i] == ' ' || body[i] == '\t') {
			i++
		}
		if !bytes.HasPrefix(body[i:], []byte("\r\n")) {
			return nil, bad("a boundary line does not end")
		}
		i += 2
		var header textproto.MIMEHeader
		start := i + 2 // a part without headers
		if !bytes.HasPrefix(body[i:], []byte("\r\n")) {
			h := bytes.Index(body[i:], []byte("\r\n\r\n"))
			if h < 0 {
				return nil, bad("a part's headers do not end")
			}
			var err error
			header, err = textproto.NewReader(bufio.NewReader(bytes.NewReader(body[i : i+h+4]))).ReadMIMEHeader()
			if err != nil {
				return nil, bad("a part's headers: " + err.Error())
			}
			start = i + h + 4
		}
		// A reader that decodes a transfer encoding (Go's decodes
		// quoted-printable) would read other bytes than these.
		switch strings.ToLower(header.Get("Content-Transfer-Encoding")) {
		case "", "7bit", "8bit", "binary":
		default:
			return nil, bad("a part has a Content-Transfer-Encoding")
		}
		end := bytes.Index(body[start:], next)
		if end < 0 {
			return nil, bad("a part does not end with the boundary")
		}
		p := formPart{start: start, end: start + end}
		if cd := header.Get("Content-Disposition"); cd != "" {
			d, dp, err := mime.ParseMediaType(cd)
			if err != nil || d != "form-data" {
				return nil, bad(fmt.Sprintf("a part's Content-Disposition %q", cd))
			}
			p.name, p.filename = dp["name"], dp["filename"]
		}
		if len(header["Content-Disposition"]) > 1 {
			return nil, bad("a part has two Content-Disposition headers")
		}
		parts = append(parts, p)
		if len(parts) > 1000 {
			return nil, bad("more than 1000 parts")
		}
		i = p.end + 2
	}
}
