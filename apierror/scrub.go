package apierror

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// redacted replaces what Scrub removes.
const redacted = "[redacted]"

// maxUpstreamMessage bounds, in runes, the message of a provider's error
// passed on to a client.
const maxUpstreamMessage = 1000

// secretPatterns match what names the operator's provider account or its
// credentials in a provider's error message: OpenAI organization, project
// and user ids, API keys of the usual shapes (sk-…, sk-ant-…, sk-proj-…,
// Google AIza…, AWS access key ids) and the masked key fragments that
// providers echo ("sk-abc1****wxyz"), bearer tokens, credentials in URLs
// (user:password@host) and secrets in their query strings.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\borg-[A-Za-z0-9]{6,}`),
	regexp.MustCompile(`\bproj_[A-Za-z0-9]{6,}`),
	regexp.MustCompile(`\buser-[A-Za-z0-9]{12,}`),
	regexp.MustCompile(`\b(?:sk|pk|rk)-[A-Za-z0-9_\-*…]{6,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{20,}`),
	regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{12,}`),
	regexp.MustCompile(`[A-Za-z0-9_\-]*\*{3,}[A-Za-z0-9_\-*]*`),
	regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9_\-.~+/=]+`),
}

// urlUserinfo matches the credentials of a URL (scheme://user:pass@).
var urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@"'<>]+@`)

// urlSecretParam matches a secret in a URL's query string.
var urlSecretParam = regexp.MustCompile(`(?i)([?&](?:key|api[_-]?key|access_token|token|sig|signature|x-goog-api-key)=)[^&\s"'<>]+`)

// Scrub returns s without the provider account ids and credentials it
// may hold (see secretPatterns), nor any of secrets (the provider keys the
// gateway used), each replaced with "[redacted]".
func Scrub(s string, secrets ...string) string {
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, redacted)
		}
	}
	s = urlUserinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	s = urlSecretParam.ReplaceAllString(s, "${1}"+redacted)
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, redacted)
	}
	return s
}

// UpstreamFields are the parts of a provider's error answer that reach a
// client, as FromUpstream reads them.
type UpstreamFields struct {
	// Type, Code, Param and Message are the error's fields, scrubbed; ""
	// when the answer had none.
	Type, Code, Param, Message string
	// RequestID is the provider's request id, when its body carried one.
	RequestID string
}

// UpstreamReader reads a provider's error body of its dialect's own shape
// into f (unscrubbed: ReadUpstream scrubs and clips it), reporting false
// when v is not of that shape. v is the parsed body, an object or an
// array.
type UpstreamReader func(status int, v gjson.Result, f *UpstreamFields) bool

// upstreamReaders are the dialects' readers, tried in order before the
// generic reading.
var upstreamReaders []UpstreamReader

// RegisterUpstreamReader adds a dialect's reader of its providers' error
// bodies; a dialect package calls it from its init.
func RegisterUpstreamReader(r UpstreamReader) { upstreamReaders = append(upstreamReaders, r) }

// ReadUpstream reads a provider's error body, whatever its shape: a
// registered dialect's (RegisterUpstreamReader), else OpenAI's
// {"error":{"message","type","param","code"}}, Anthropic's
// {"type":"error","error":{"type","message"}}, the same fields at the top
// level ({"code","message"}, {"message"}), {"error":"…"}, or text. Every
// field is scrubbed (Scrub) with secrets.
func ReadUpstream(status int, body []byte, secrets ...string) UpstreamFields {
	var f UpstreamFields
	v := gjson.ParseBytes(body)
	if !readDialect(status, v, &f) {
		readGeneric(status, body, v, &f)
	}
	f.Message = clip(strings.Join(strings.Fields(f.Message), " "))
	for _, p := range []*string{&f.Type, &f.Code, &f.Param, &f.Message, &f.RequestID} {
		*p = Scrub(*p, secrets...)
	}
	return f
}

// readDialect reads v with the first registered reader that knows its
// shape.
func readDialect(status int, v gjson.Result, f *UpstreamFields) bool {
	if !v.IsObject() && !v.IsArray() {
		return false
	}
	for _, r := range upstreamReaders {
		if r(status, v, f) {
			return true
		}
	}
	*f = UpstreamFields{}
	return false
}

// readGeneric reads the shapes every dialect's providers may answer with.
func readGeneric(status int, body []byte, v gjson.Result, f *UpstreamFields) {
	if !v.IsObject() {
		if t := strings.TrimSpace(string(body)); t != "" && utf8.ValidString(t) && !strings.HasPrefix(t, "<") {
			f.Message = t
		}
		return
	}
	e := v.Get("error")
	if e.Type == gjson.String {
		f.Message = e.Str
		e = v
	} else if !e.IsObject() {
		e = v
	}
	if f.Message == "" {
		f.Message = Str(e.Get("message"))
	}
	f.Type = Str(e.Get("type"))
	if f.Type == "error" { // Anthropic's outer type, without an inner one
		f.Type = ""
	}
	f.Code = Str(e.Get("code"))
	f.Param = Str(e.Get("param"))
	f.RequestID = Str(v.Get("request_id"))
}

// Str is v's text when it is a string or a number, else "": a field of
// an error body, as an UpstreamReader reads it.
func Str(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Number:
		return v.Raw
	}
	return ""
}

// clip bounds s to maxUpstreamMessage runes.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxUpstreamMessage {
		return s
	}
	r := []rune(s)
	return string(r[:maxUpstreamMessage]) + "…"
}

// UpstreamBody rebuilds a provider's error answer (status and body) for a
// client: the fields ReadUpstream keeps, in the client's protocol shape s,
// OpenAI's or Anthropic's (with, in Anthropic's, the provider's
// request_id when it sent one). A field the provider left out is null
// (code, param) or derived from the status (type, message). It is the one
// path from a provider's error body to a client: nothing else the body
// held (organization or project ids, key fragments, debugging fields)
// passes.
func UpstreamBody(status int, body []byte, s Shape, secrets ...string) []byte {
	f := ReadUpstream(status, body, secrets...)
	if f.Message == "" {
		f.Message = "the upstream provider answered HTTP " + strconv.Itoa(status)
		if t := http.StatusText(status); t != "" {
			f.Message += " " + t
		}
	}
	if s == ShapeAnthropic {
		if f.Type == "" {
			f.Type = anthropicType(&Error{Status: status})
		}
		type inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		b, _ := json.Marshal(struct {
			Type      string `json:"type"`
			Error     inner  `json:"error"`
			RequestID string `json:"request_id,omitempty"`
		}{"error", inner{f.Type, f.Message}, f.RequestID})
		return b
	}
	switch {
	case f.Type != "":
	case status == http.StatusTooManyRequests:
		f.Type = TypeRateLimit
	case status >= 500:
		f.Type = TypeServer
	default:
		f.Type = TypeInvalidRequest
	}
	e := New(status, f.Type, f.Code, f.Message)
	if f.Param != "" {
		e.Param = &f.Param
	}
	return e.OpenAIBody()
}
