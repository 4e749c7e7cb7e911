package chatproxy

import (
	"strings"
	"testing"
)

// An upstream's error event reaches the client scrubbed, in its
// protocol's shape, with the event's other lines and (OpenAI) the chunk's
// other members kept; a clean error event passes byte for byte.
func TestErrorEventsAreScrubbed(t *testing.T) {
	for i, tc := range []struct {
		proto    Protocol
		ev, want string
	}{
		{OpenAI, `data: {"id":"c","choices":[{"index":0,"delta":{"content":"8"}}],"error":{"message":"quota of org-AbCdEf123456 exceeded","type":"insufficient_quota","code":"insufficient_quota","organization":"org-AbCdEf123456"}}` + "\n\n",
			`data: {"id":"c","choices":[{"index":0,"delta":{"content":"8"}}],"error":{"message":"quota of [redacted] exceeded","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}` + "\n\n"},
		{Anthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key sk-ant-api03-QQQQQQQQ\"}}\n\n",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key [redacted]\"}}\n\n"},
		{Responses, "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"project proj_Zz9Yy8Xx7Ww6 failed\",\"param\":null,\"sequence_number\":4,\"debug\":\"x\"}\n\n",
			"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"project [redacted] failed\",\"param\":null,\"sequence_number\":4}\n\n"},
		{Responses, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"org-AbCdEf123456 is over\"}}}\n\n",
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"[redacted] is over\"}}}\n\n"},
		// Clean: unchanged.
		{OpenAI, `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n", `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"},
	} {
		tp := tap{proto: tc.proto}
		got := string(tp.event([]byte(tc.ev)))
		if got != tc.want {
			t.Errorf("Test %d: forwarded\n%q\nwant\n%q", i, got, tc.want)
		}
		if !tp.upstreamError {
			t.Errorf("Test %d: not seen as an error event", i)
		}
		if strings.Contains(got, "org-") || strings.Contains(got, "proj_") || strings.Contains(got, "sk-ant") {
			t.Errorf("Test %d: a secret reached the client: %s", i, got)
		}
	}
}
