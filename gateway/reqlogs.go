package gateway

import (
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/store"
)

// BackgroundLogged queues the final response of background response ref,
// just billed, as the response of its create's log (reqlog.Entry.Final).
func BackgroundLogged(sh *Shared, b *RequestLogBounds, ref responses.Ref, body []byte, truncated bool) {
	if sh.RequestLogs == nil || b == nil || !ref.Log {
		return
	}
	sh.RequestLogs.Enqueue(reqlog.Entry{
		Log: store.RequestLog{RequestID: ref.Record, KeyID: ref.KeyID, User: ref.User, Time: ref.Created.UTC(),
			ResponseTruncated: truncated},
		Response: body, TTL: b.TTL, Redactor: b.Redactor, Final: true,
	})
}
