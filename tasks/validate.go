package tasks

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
)

// defaultImageSize is the contract's default size for image models.
const defaultImageSize = "1024x1024"

// maxImages is the contract's limit on n.
const maxImages = 4

// request is a validated POST /v1/tasks body.
type request struct {
	// body is the client's JSON, untouched.
	body []byte
	// pin, if set, holds body's memory while upstream requests send it.
	pin Pinner
	// route serves the model.
	route *providers.Route
	// model is the client's model id.
	model string
	// prompt is the text prompt.
	prompt string
	// negativePrompt is the optional negative prompt.
	negativePrompt string
	// size is "<width>x<height>", or empty for the provider's default.
	size string
	// n is the number of images, or 0 if the client did not say.
	n int
	// seed is the seed as a decimal integer, or empty.
	seed string
	// seconds is the video duration asked for (OpenAI "seconds" or
	// DashScope "duration"), or 0.
	seconds int64
	// fields holds the members the gateway reads, each at most once.
	fields fields
	// passThrough is set for a create of /v1/images/generations: an
	// OpenAI provider gets the client's body with only the model replaced,
	// and the client its answer (see ImagesReply).
	passThrough bool
}

// parseRequest validates a create body, nested at most maxDepth levels,
// against the routing table. Every failure is a 400 naming the offending
// field, except an unknown model (404). The body is scanned once, and a
// member of TaskMembers may appear only once in it, so what is checked is
// what the provider reads; no memory is held per member.
func parseRequest(body []byte, routes *providers.Table, maxDepth int) (*request, *apierror.Error) {
	return parseCreate(body, routes, maxDepth, false)
}

// parseCreate is parseRequest, for /v1/images/generations when passThrough
// is set.
func parseCreate(body []byte, routes *providers.Table, maxDepth int, passThrough bool) (*request, *apierror.Error) {
	var de *jsonlimit.DepthError
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(maxDepth)); errors.As(err, &de) {
		return nil, apierror.InvalidBody(err)
	} else if err != nil {
		return nil, notObject()
	}
	r := &request{body: body, passThrough: passThrough}
	if isObject, aerr := scanMembers(body, maxDepth, TaskMembers, &r.fields); aerr != nil {
		return nil, aerr
	} else if !isObject {
		return nil, notObject()
	}
	m := r.fields[memberModel]
	if m.Type != gjson.String || m.Str == "" {
		return nil, apierror.InvalidRequest("model", "model is required and must be a string")
	}
	r.model = m.Str
	route, err := routes.Lookup(r.model)
	if err != nil {
		return nil, apierror.NotFound("model_not_found", "the model '"+r.model+"' does not exist").WithParam("model")
	}
	switch route.Kind {
	case providers.KindImage, providers.KindVideo:
	case providers.KindChat:
		return nil, apierror.InvalidRequest("model", "'"+r.model+"' is a chat model: use /v1/chat/completions; /v1/tasks serves image and video models only")
	case providers.KindMessages:
		return nil, apierror.InvalidRequest("model", "'"+r.model+"' is served by /v1/messages; /v1/tasks serves image and video models only")
	default:
		return nil, apierror.InvalidRequest("model", "'"+r.model+"' is not an image or video model")
	}
	r.route = route

	p := r.fields[memberPrompt]
	if p.Type != gjson.String || strings.TrimSpace(p.Str) == "" {
		return nil, apierror.InvalidRequest("prompt", "prompt is required and must be a non-empty string")
	}
	r.prompt = p.Str
	if np := r.fields[memberNegativePrompt]; np.Exists() && np.Type != gjson.Null {
		if np.Type != gjson.String {
			return nil, apierror.InvalidRequest("negative_prompt", "negative_prompt must be a string")
		}
		r.negativePrompt = np.Str
	}
	if e := r.parseSize(); e != nil {
		return nil, e
	}
	if n := r.fields[memberN]; n.Exists() && n.Type != gjson.Null {
		v, ok := jsonInt(n)
		if !ok || v < 1 || v > maxImages {
			return nil, apierror.InvalidRequest("n", "n must be an integer from 1 to 4")
		}
		if route.Kind == providers.KindVideo && v != 1 {
			return nil, apierror.InvalidRequest("n", "a video task generates one video: n must be 1")
		}
		r.n = int(v)
	}
	if s := r.fields[memberSeed]; s.Exists() && s.Type != gjson.Null {
		v, ok := jsonInt(s)
		if !ok {
			return nil, apierror.InvalidRequest("seed", "seed must be an integer")
		}
		r.seed = strconv.FormatInt(v, 10)
	}
	if route.Kind == providers.KindVideo {
		if e := r.parseVideoSeconds(); e != nil {
			return nil, e
		}
	}
	return r, nil
}

// parseVideoSeconds reads a video's duration from "seconds" (OpenAI's
// name) or "duration" (DashScope's). The adapters send it under the name
// their provider reads (see forwardEdits.seconds and dashScopeBody), so
// that what is billed is what is asked for; the two given with different
// values are refused, since one of them would be dropped.
func (r *request) parseVideoSeconds() *apierror.Error {
	secs, e := r.parseSeconds(memberSeconds)
	if e != nil {
		return e
	}
	dur, e := r.parseSeconds(memberDuration)
	if e != nil {
		return e
	}
	if secs > 0 && dur > 0 && secs != dur {
		return apierror.InvalidRequest("duration", fmt.Sprintf(
			"seconds (%d) and duration (%d) both give the video's duration: give it once", secs, dur))
	}
	r.seconds = max(secs, dur)
	return nil
}

// parseSeconds reads a video duration field: a whole number from 1 to
// maxVideoSeconds, or a string holding one; 0 when absent or null.
func (r *request) parseSeconds(m member) (int64, *apierror.Error) {
	d, field := r.fields[m], memberNames[m]
	if !d.Exists() || d.Type == gjson.Null {
		return 0, nil
	}
	v, ok := jsonInt(d)
	if d.Type == gjson.String {
		n, err := strconv.ParseInt(d.Str, 10, 64)
		v, ok = n, err == nil
	}
	if !ok || v < 1 || v > maxVideoSeconds {
		return 0, apierror.InvalidRequest(field, field+" must be a whole number of seconds from 1 to "+strconv.Itoa(maxVideoSeconds))
	}
	return v, nil
}

// parseSize checks "size" and applies the image default.
func (r *request) parseSize() *apierror.Error {
	s := r.fields[memberSize]
	if !s.Exists() || s.Type == gjson.Null {
		if r.route.Kind == providers.KindImage {
			r.size = defaultImageSize
			if len(r.route.Sizes) > 0 && !slices.Contains(r.route.Sizes, r.size) {
				r.size = r.route.Sizes[0]
			}
		}
		return nil
	}
	if s.Type == gjson.String && s.Str == "auto" && r.passThrough && r.route.Provider.Protocol == providers.ProtocolOpenAI &&
		(len(r.route.Sizes) == 0 || slices.Contains(r.route.Sizes, s.Str)) {
		return nil // OpenAI's own choice, passed through
	}
	if s.Type != gjson.String || !wellFormedSize(s.Str) {
		return apierror.InvalidRequest("size", "size must be a string '<width>x<height>' of positive integers, e.g. '1024x1024'")
	}
	if len(r.route.Sizes) > 0 && !slices.Contains(r.route.Sizes, s.Str) {
		return apierror.InvalidRequest("size", "size '"+s.Str+"' is not supported by '"+r.model+"'; supported: "+strings.Join(r.route.Sizes, ", "))
	}
	r.size = s.Str
	return nil
}

// wellFormedSize reports whether s is "<width>x<height>" with both positive
// decimal integers.
func wellFormedSize(s string) bool {
	w, h, ok := strings.Cut(s, "x")
	return ok && positiveInt(w) && positiveInt(h)
}

func positiveInt(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	v, _ := strconv.Atoi(s)
	return v > 0
}

// jsonInt returns the value of a JSON number that is a whole number fitting
// in an int64 (1, 1.0 and 1e2 are whole; 1.5 is not).
func jsonInt(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	if i, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(v.Raw, 64)
	if err != nil || f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int64(f), true
}

// notObject is the error of a body that is not a JSON object.
func notObject() *apierror.Error {
	return apierror.InvalidRequest("", "the request body must be a JSON object")
}

// ParseLimit parses the "limit" query parameter of GET /v1/tasks: empty
// means the default of 20; otherwise an integer from 1 to 100.
func ParseLimit(s string) (int, *apierror.Error) {
	if s == "" {
		return defaultListLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, limitError()
	}
	return n, nil
}

func limitError() *apierror.Error {
	return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "invalid_request",
		"limit must be an integer from 1 to 100").WithParam("limit")
}
