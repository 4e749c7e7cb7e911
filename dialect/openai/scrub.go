package openai

import (
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
)

// scrubEvent returns an upstream's error chunk, ev, with its data rebuilt
// the way an error status's body is (apierror.UpstreamBody): its
// {"error":{…}} keeps only the error's type, code, param and message,
// scrubbed of account ids and credentials; the chunk's other members (a
// last delta) and the event's other lines (event:, id:) are kept.
func scrubEvent(ev []byte) []byte {
	payload := tapcore.JoinData(nil, ev)
	root := gjson.ParseBytes(payload)
	e := root.Get("error")
	if tapcore.Clean(e, "message", "type", "code", "param") {
		return ev
	}
	rebuilt := gjson.GetBytes(apierror.UpstreamBody(http.StatusInternalServerError, payload, apierror.ShapeOpenAI), "error")
	data, _ := sjson.SetRawBytes(payload, "error", []byte(rebuilt.Raw))
	return tapcore.ReplaceData(ev, data)
}
