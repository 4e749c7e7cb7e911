package gemini

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
)

func init() { apierror.RegisterUpstreamReader(ReadUpstreamError) }

// ReadUpstreamError reads Google's error body for apierror.ReadUpstream:
// a google.rpc.Status, {"error":{"code","message","status"}}, also inside
// a one-element array (as a streamGenerateContent without alt=sse
// answers). Its code is the HTTP status; its status names the error and
// becomes the client's code.
func ReadUpstreamError(status int, v gjson.Result, f *apierror.UpstreamFields) bool {
	array := v.IsArray()
	if array {
		v = v.Get("0")
	}
	e := v.Get("error")
	s := apierror.Str(e.Get("status"))
	if !e.IsObject() || !array && s == "" {
		return false
	}
	f.Message = apierror.Str(e.Get("message"))
	f.Type = apierror.Str(e.Get("type"))
	f.Code = apierror.Str(e.Get("code"))
	if s != "" && (f.Code == "" || f.Code == strconv.Itoa(status)) {
		f.Code = s
	}
	f.Param = apierror.Str(e.Get("param"))
	f.RequestID = apierror.Str(v.Get("request_id"))
	return true
}
