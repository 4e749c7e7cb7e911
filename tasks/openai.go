package tasks

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/providers"
)

// openAI speaks OpenAI Images (synchronous) and OpenAI Videos
// (asynchronous). The client's body is forwarded with the model replaced
// and the fields OpenAI would reject removed.
type openAI struct{}

func (openAI) submit(ctx context.Context, c *call, r *request) (*outcome, error) {
	if c.kind == providers.KindImage {
		return openAIImage(ctx, c, r)
	}
	body, err := forwardBody(r.body, c.maxDepth, forwardEdits{model: c.model,
		drop: membersOf(memberNegativePrompt, memberSeed, memberN), seconds: r.seconds})
	if err != nil {
		return nil, err
	}
	body.pin = r.pin
	status, header, data, err := exchange(ctx, c, http.MethodPost, "/videos", nil, body)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, openAIError(status, header, data)
	}
	return openAIVideo(data)
}

func (openAI) poll(ctx context.Context, c *call, id string) (*outcome, error) {
	status, header, data, err := exchange(ctx, c, http.MethodGet, "/videos/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, &upstreamError{status: status, name: errTaskExpired, msg: "the provider no longer knows this task", permanent: true}
	}
	if status/100 != 2 {
		return nil, openAIError(status, header, data)
	}
	return openAIVideo(data)
}

// openAIImage generates images with POST /images/generations. The answer
// and the images decoded from it are charged to c.buffers until the
// outcome is released.
func openAIImage(ctx context.Context, c *call, r *request) (*outcome, error) {
	edits := forwardEdits{model: c.model, drop: membersOf(memberNegativePrompt, memberSeed), defaultSize: r.size}
	if r.passThrough {
		edits = forwardEdits{model: c.model}
	}
	body, err := forwardBody(r.body, c.maxDepth, edits)
	if err != nil {
		return nil, err
	}
	body.pin = r.pin
	limit := int64(max(r.n, 1))*maxImageJSONB64 + maxJSONBody
	ch := &charge{b: c.buffers}
	status, header, data, err := exchangeLimit(ctx, c, limit, ch, http.MethodPost, "/images/generations", nil, body)
	if err != nil {
		ch.release()
		return nil, err
	}
	if status/100 != 2 {
		ch.release()
		return nil, openAIError(status, header, data)
	}
	out, err := openAIImages(data, ch, status)
	if err != nil {
		ch.release()
		return nil, err
	}
	if r.passThrough && out.state == StatusSucceeded {
		out.reply = imagesReply(data)
	}
	return out, nil
}

// openAIImages reads the images of an OpenAI Images answer, charging the
// decoded ones to ch. The answer is read in place, not copied.
func openAIImages(data []byte, ch *charge, status int) (*outcome, error) {
	out := &outcome{state: StatusSucceeded, progress: 100, answer: ch}
	// data is not modified while the view lives.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	if u := root.Get("usage"); u.IsObject() {
		if nu, err := openai.NormalizeImagesUsage([]byte(u.Raw)); err == nil {
			out.usage = &nu
		}
	}
	for _, d := range root.Get("data").Array() {
		if b64 := d.Get("b64_json").String(); b64 != "" {
			n := base64.StdEncoding.DecodedLen(len(b64))
			if !ch.take(int64(n)) {
				return nil, buffersSpent(status)
			}
			raw := make([]byte, n)
			n, err := base64.StdEncoding.Decode(raw, unsafe.Slice(unsafe.StringData(b64), len(b64)))
			if err != nil {
				return nil, badAnswer("b64_json is not base64")
			}
			out.images = append(out.images, mediaRef{data: raw[:n]})
			continue
		}
		if u := d.Get("url").String(); u != "" {
			// OpenAI image links expire after an hour: re-host them.
			// A copy: u would keep the whole answer alive.
			out.images = append(out.images, mediaRef{url: strings.Clone(u)})
		}
	}
	if len(out.images) == 0 {
		return out.fail("", "the provider returned no image"), nil
	}
	return out, nil
}

// openAIVideo reads an OpenAI video object.
func openAIVideo(data []byte) (*outcome, error) {
	v := gjson.ParseBytes(data)
	id := v.Get("id").String()
	if id == "" {
		return nil, badAnswer("no video id")
	}
	out := &outcome{upstreamID: id, progress: -1}
	if p := v.Get("progress"); p.Type == gjson.Number {
		out.progress = int(p.Int())
	}
	switch v.Get("status").String() {
	case "queued", "in_progress":
		out.state = StatusRunning
	case "completed":
		out.state = StatusSucceeded
		out.video = &mediaRef{path: "/videos/" + url.PathEscape(id) + "/content"}
		out.readSeconds(v.Get("seconds"))
	case "failed":
		out.fail(v.Get("error.code").String(), v.Get("error.message").String())
	case "cancelled", "canceled":
		out.state, out.errName, out.errMsg = StatusFailed, errCanceled, "the provider canceled the task"
	case "expired":
		out.state, out.errName, out.errMsg = StatusFailed, errTaskExpired, "the provider expired the task"
	default:
		return nil, badAnswer("unknown video status " + strconv.Quote(v.Get("status").String()))
	}
	return out, nil
}

// openAIError reads OpenAI's {"error":{"message","type","code"}}.
func openAIError(status int, header http.Header, data []byte) *upstreamError {
	e := gjson.GetBytes(data, "error")
	code := e.Get("code").String()
	if code == "" {
		code = e.Get("type").String()
	}
	return httpError(status, header, code, e.Get("message").String())
}

// badRequest is the error of a request body the gateway failed to build.
func badRequest(err error) *upstreamError {
	return &upstreamError{name: errUpstream, msg: "the gateway could not build the upstream request", permanent: true, cause: err}
}
