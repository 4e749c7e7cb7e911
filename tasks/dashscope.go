package tasks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
)

// dashScope speaks DashScope's native asynchronous generation API. Its
// result URLs stay valid for 24 hours, so they are returned as they are.
type dashScope struct{}

func (dashScope) submit(ctx context.Context, c *call, r *request) (*outcome, error) {
	body, err := dashScopeBody(c, r)
	if err != nil {
		return nil, badRequest(err)
	}
	path := "/services/aigc/video-generation/video-synthesis"
	if c.kind == providers.KindImage {
		path = "/services/aigc/text2image/image-synthesis"
	}
	async := http.Header{"X-Dashscope-Async": {"enable"}}
	status, header, data, err := exchange(ctx, c, http.MethodPost, path, async, wholeBody(body))
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, dashScopeError(status, header, data)
	}
	return dashScopeTask(c, data)
}

func (dashScope) poll(ctx context.Context, c *call, id string) (*outcome, error) {
	status, header, data, err := exchange(ctx, c, http.MethodGet, "/tasks/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, &upstreamError{status: status, name: errTaskExpired, msg: "the provider no longer knows this task", permanent: true}
	}
	if status/100 != 2 {
		return nil, dashScopeError(status, header, data)
	}
	out, err := dashScopeTask(c, data)
	if err == nil && out.upstreamID == "" {
		out.upstreamID = id
	}
	return out, err
}

// dashScopeTask reads a DashScope task answer (creation or query).
func dashScopeTask(c *call, data []byte) (*outcome, error) {
	o := gjson.GetBytes(data, "output")
	if !o.Exists() {
		return nil, badAnswer("no output")
	}
	out := &outcome{upstreamID: o.Get("task_id").String(), progress: -1}
	switch o.Get("task_status").String() {
	case "PENDING", "SUSPENDED", "RUNNING":
		out.state = StatusRunning
	case "SUCCEEDED":
		out.state = StatusSucceeded
		if c.kind == providers.KindImage {
			for _, res := range o.Get("results").Array() {
				if u := res.Get("url").String(); u != "" {
					out.images = append(out.images, mediaRef{url: u, keep: true})
				}
			}
			if len(out.images) == 0 {
				code, msg := firstResultError(o)
				return out.fail(code, msg), nil
			}
			return out, nil
		}
		u := o.Get("video_url").String()
		if u == "" {
			return out.fail("", "the provider returned no video"), nil
		}
		out.video = &mediaRef{url: u, keep: true}
		usage := gjson.GetBytes(data, "usage")
		out.readSeconds(usage.Get("video_duration"), usage.Get("duration"))
	case "FAILED":
		out.fail(o.Get("code").String(), o.Get("message").String())
	case "CANCELED":
		out.state, out.errName, out.errMsg = StatusFailed, errCanceled, "the task was canceled at the provider"
	case "UNKNOWN":
		out.state, out.errName, out.errMsg = StatusFailed, errTaskExpired, "the provider no longer knows this task"
	default:
		return nil, badAnswer("unknown task_status " + o.Get("task_status").Raw)
	}
	if out.upstreamID == "" && out.state == StatusRunning {
		return nil, badAnswer("no task_id")
	}
	return out, nil
}

// firstResultError returns the code and message of the first failed image
// result, for a SUCCEEDED task that delivered no image.
func firstResultError(o gjson.Result) (string, string) {
	for _, res := range o.Get("results").Array() {
		if res.Get("code").Exists() {
			return res.Get("code").String(), res.Get("message").String()
		}
	}
	return "", "the provider returned no image"
}

// dashScopeError reads DashScope's top-level {request_id, code, message}.
func dashScopeError(status int, header http.Header, data []byte) *upstreamError {
	return httpError(status, header, gjson.GetBytes(data, "code").String(), gjson.GetBytes(data, "message").String())
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
