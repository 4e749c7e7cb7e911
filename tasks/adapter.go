package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// adapter speaks one provider protocol's generation API.
type adapter interface {
	// submit sends a validated request upstream. An image may come back
	// finished; otherwise the outcome is running with an upstream job id.
	submit(ctx context.Context, c *call, r *request) (*outcome, error)
	// poll reads the state of upstream job id.
	poll(ctx context.Context, c *call, id string) (*outcome, error)
}

// adapterFor returns the adapter of a provider protocol, or nil.
func adapterFor(protocol string) adapter {
	switch protocol {
	case providers.ProtocolOpenAI:
		return openAI{}
	case providers.ProtocolDashScope:
		return dashScope{}
	}
	return nil
}

// call is who an upstream request goes to, and for what.
type call struct {
	// client sends the request.
	client *http.Client
	// p is the provider called: its dialect sets the credentials of the
	// call's requests (upstream.NewRequest), and media may be downloaded
	// from the hosts of its configured base URLs whatever their address.
	p *providers.Provider
	// attempt is the base URL and key to use.
	attempt providers.Attempt
	// kind is "image" or "video".
	kind string
	// model is the upstream model id.
	model string
	// maxDepth bounds the nesting of the provider's answers.
	maxDepth int
	// buffers is charged with large answers (OpenAI Images); nil charges
	// nothing.
	buffers Buffers
	// status is the status of the last answer to the call, for its span.
	status int
	// provider, deployment and servedModel name who serves the task, for
	// a submission (see Task); empty for a poll.
	provider, deployment, servedModel string
}

// outcome is what an upstream said about a job.
type outcome struct {
	// state is StatusRunning, StatusSucceeded or StatusFailed.
	state string
	// upstreamID is the provider's job id.
	upstreamID string
	// progress is the reported percentage, or -1 if none was reported.
	progress int
	// images are the generated images (succeeded image jobs).
	images []mediaRef
	// video is the generated video (succeeded video jobs).
	video *mediaRef
	// seconds is the reported video duration, or 0.
	seconds int64
	// usage is the token usage an images answer reported (gpt-image-1's
	// text, image input and image output tokens), nil when it reported
	// none.
	usage *billing.Usage
	// answer is what the answer holding the outcome's inline images took
	// from the Buffers, released by the outcome's holder (release).
	answer *charge
	// reply is an OpenAI Images answer to pass to the client (passThrough
	// requests), or nil.
	reply *ImagesReply
	// badSeconds is a reported duration that is not one (see
	// reportedSeconds), clipped, for the log; "" when none.
	badSeconds string
	// errName and errMsg describe a failure.
	errName, errMsg string
}

// release gives back the memory the outcome's answer took from the
// Buffers; it may be called on nil, and more than once.
func (o *outcome) release() {
	if o != nil {
		o.answer.release()
	}
}

// mediaRef is a generated file as an upstream delivered it.
type mediaRef struct {
	// url is where the file can be downloaded.
	url string
	// path, set in place of url, is the file's path below the base URL
	// of the call that delivered it: its download is a request to the
	// provider, with the provider's credentials (upstream.NewRequest).
	path string
	// keep means url stays valid for at least 24 hours and is returned to
	// the client as it is.
	keep bool
	// data holds the file when the upstream sent it inline.
	data []byte
}

// Error names used in a failed task's error (contract section 7).
const (
	errUpstream       = "UpstreamError"
	errTimeout        = "UpstreamTimeout"
	errContentPolicy  = "ContentPolicyViolation"
	errInvalidParam   = "InvalidParameter"
	errRateLimited    = "RateLimited"
	errCanceled       = "Canceled"
	errTaskExpired    = "TaskExpired"
	maxErrMessageRune = 500
)

// servedBy records in t the deployment a submission went to, for polls
// and the ledger; a poll's call records nothing.
func (c *call) servedBy(t *Task) {
	if c.deployment == "" {
		return
	}
	t.Provider, t.Deployment, t.ServedModel, t.UpstreamModel = c.provider, c.deployment, c.servedModel, c.model
}

// upstreamError is a failed exchange with a provider.
type upstreamError struct {
	// status is the HTTP status, or 0 when no response arrived.
	status int
	// name and msg form the task's error text.
	name, msg string
	// retryAfter is the provider's Retry-After, if any.
	retryAfter time.Duration
	// permanent means retrying cannot help.
	permanent bool
	// cause is the underlying transport error, for logs.
	cause error
	// local means the gateway, not the provider, failed the exchange
	// (see buffersSpent): the provider's answer counts as a success.
	local bool
}

func (e *upstreamError) Error() string {
	if e.cause != nil {
		return e.name + ": " + e.msg + ": " + e.cause.Error()
	}
	return e.name + ": " + e.msg
}

// text is the task error text: "<ErrorName>: <message>".
func (e *upstreamError) text() string { return e.name + ": " + e.msg }

// unanswered reports whether err means the request got no response at all,
// so it may safely be sent again elsewhere.
func unanswered(err error) bool {
	var ue *upstreamError
	return errors.As(err, &ue) && ue.status == 0 && !ue.permanent
}

// Bounds of an upstream JSON answer, which is read whole. A task's status,
// an accepted job or an error is well under a kilobyte; only OpenAI's image
// answers are large, carrying each image in base64 (b64_json), so they get
// a bound per image asked for: 16 MiB, the base64 of a 12 MiB image, above
// an incompressible 2048x1536 RGBA PNG and several times the usual output.
const (
	maxJSONBody     = 1 << 20
	maxImageJSONB64 = 16 << 20
)

// exchange sends one request, of method to path below the call's base
// URL with the provider's credentials and the extra headers in header,
// and returns the status, headers and body of the answer, which may be up
// to maxJSONBody long. A failure to get an answer is an *upstreamError
// with status 0. An answer nested deeper than c.maxDepth is not read: a
// 2xx one is an *upstreamError, another comes back with an empty body, to
// be judged by its status alone.
func exchange(ctx context.Context, c *call, method, path string, header http.Header, body *upBody) (int, http.Header, []byte, error) {
	return exchangeLimit(ctx, c, maxJSONBody, nil, method, path, header, body)
}

// exchangeLimit is exchange with an answer of up to limit bytes. With a
// non-nil ch the answer is read into a buffer charged to it (see
// readAnswer), which the caller releases once done with the answer, also
// after an error; a read beyond the budget is a permanent *upstreamError.
func exchangeLimit(ctx context.Context, c *call, limit int64, ch *charge, method, path string, header http.Header, body *upBody) (int, http.Header, []byte, error) {
	req, err := upstream.NewRequest(ctx, c.p, c.attempt, method, path, nil)
	if err != nil {
		return 0, nil, nil, &upstreamError{name: errUpstream, msg: "bad upstream request", permanent: true, cause: err}
	}
	if body != nil {
		// The transport closes the body, releasing its pin, when it is
		// done with it (which may be after Do returned); a retry on a
		// fresh connection reads it again through GetBody. The task
		// protocols authenticate with a key header, which does not sign
		// the body.
		req.Body, req.ContentLength = body.reader(), body.n
		req.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	telemetry.Inject(ctx, req.Header)
	resp, err := upstream.Send(c.client.Transport, req)
	if err != nil {
		return 0, nil, nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	c.status = resp.StatusCode
	var data []byte
	if resp.ContentLength <= limit {
		if ch != nil {
			data, err = readAnswer(resp.Body, resp.ContentLength, limit, ch)
		} else {
			data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
		}
		if errors.Is(err, errBuffersSpent) {
			return 0, nil, nil, buffersSpent(resp.StatusCode)
		}
		if err != nil {
			return 0, nil, nil, transportError(ctx, err)
		}
	}
	if resp.ContentLength > limit || int64(len(data)) > limit {
		if resp.StatusCode/100 != 2 {
			// The status of an error says enough; its oversized body (an
			// HTML page, say) is dropped.
			return resp.StatusCode, resp.Header, nil, nil
		}
		return 0, nil, nil, answerTooLarge(resp.StatusCode, limit)
	}
	var de *jsonlimit.DepthError
	if err := jsonlimit.Check(data, jsonlimit.OrDefault(c.maxDepth)); errors.As(err, &de) {
		if resp.StatusCode/100 == 2 {
			return 0, nil, nil, badAnswer(fmt.Sprintf("nested deeper than the limit of %d levels", de.Limit))
		}
		data = nil
	}
	return resp.StatusCode, resp.Header, data, nil
}

// answerTooLarge is the error of an answer longer than limit bytes.
func answerTooLarge(status int, limit int64) *upstreamError {
	return &upstreamError{status: status, name: errUpstream, permanent: true,
		msg: fmt.Sprintf("the provider's answer exceeds the gateway's limit of %d KiB", limit>>10)}
}

// buffersSpent is the error of an answer the gateway could not hold: the
// process's budget of buffered bodies (max_buffered_bodies) is spent. The
// provider is not at fault, and the task is not resubmitted elsewhere,
// where it would be generated and held again.
func buffersSpent(status int) *upstreamError {
	return &upstreamError{status: status, name: errUpstream, permanent: true, local: true,
		msg: "the gateway is holding too many provider answers in memory at once (max_buffered_bodies); retry shortly"}
}

// transportError describes a request that got no usable answer.
func transportError(ctx context.Context, err error) *upstreamError {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || routing.TimedOut(ctx, err) {
		return &upstreamError{name: errTimeout, msg: "the provider did not answer in time", cause: err}
	}
	return &upstreamError{name: errUpstream, msg: "the provider could not be reached", cause: err}
}

// httpError builds the error of a non-2xx answer from the provider's error
// code and message.
func httpError(status int, header http.Header, code, msg string) *upstreamError {
	e := &upstreamError{status: status, name: errorName(status, code), msg: cleanMessage(msg)}
	switch {
	case status == http.StatusUnauthorized:
		// The message may describe the gateway's own credentials.
		e.name, e.msg = errUpstream, "the provider rejected the gateway's credentials"
	case e.msg == "" && code != "":
		e.msg = code
	case e.msg == "":
		e.msg = "the provider answered HTTP " + strconv.Itoa(status)
	case e.name == errUpstream && code != "":
		e.msg = code + ": " + e.msg
	}
	// Capped at an hour, as for chat; a poll waits at most MaxBackoff.
	e.retryAfter = routing.ParseRetryAfter(header.Get("Retry-After"), time.Now())
	e.permanent = status == http.StatusBadRequest || status == http.StatusNotFound ||
		status == http.StatusGone || status == http.StatusUnprocessableEntity ||
		status == http.StatusRequestEntityTooLarge
	return e
}

// fail marks o as failed with the provider's code and message.
func (o *outcome) fail(code, msg string) *outcome {
	o.state = StatusFailed
	o.errName = errorName(0, code)
	o.errMsg = cleanMessage(msg)
	switch {
	case o.errMsg == "" && code != "":
		o.errMsg = code
	case o.errMsg == "":
		o.errMsg = "the provider reported a failure without a reason"
	case o.errName == errUpstream && code != "":
		o.errMsg = code + ": " + o.errMsg
	}
	return o
}

// errorName maps a provider status and error code to a task error name.
func errorName(status int, code string) string {
	c := strings.ToLower(code)
	switch {
	case c == "moderation_blocked" || c == "content_policy_violation" || c == "content_filter" ||
		c == "datainspectionfailed" || c == "ipinfringementsuspect" || strings.Contains(c, "moderation"):
		return errContentPolicy
	case status == http.StatusTooManyRequests || strings.Contains(c, "throttl") || strings.Contains(c, "rate_limit"):
		return errRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout || strings.Contains(c, "timeout"):
		return errTimeout
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity || strings.Contains(c, "invalid"):
		return errInvalidParam
	}
	return errUpstream
}

// cleanMessage trims a provider message to one bounded line, without the
// account ids and credentials it may name (apierror.Scrub).
func cleanMessage(s string) string {
	s = apierror.Scrub(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > maxErrMessageRune {
		s = string(r[:maxErrMessageRune]) + "…"
	}
	return s
}

// badAnswer is the error of a 2xx answer that cannot be understood.
func badAnswer(what string) *upstreamError {
	return &upstreamError{status: http.StatusOK, name: errUpstream, msg: fmt.Sprintf("the provider sent an unexpected answer (%s)", what)}
}
