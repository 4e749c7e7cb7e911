package batches

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
)

// Endpoints a batch may run.
const (
	EndpointChat       = "/v1/chat/completions"
	EndpointEmbeddings = "/v1/embeddings"
)

// kindOf is the model kind that serves endpoint.
var kindOf = map[string]string{EndpointChat: providers.KindChat, EndpointEmbeddings: providers.KindEmbedding}

// plan is what a checked input file asks for.
type plan struct {
	provider *providers.Provider
	route    *providers.Route            // the first line's model's route
	routes   map[string]*providers.Route // client model → its route
	models   map[string]string           // upstream model → client model
	upstream map[string]string           // client model → upstream model
	first    string                      // the first line's client model
	estimate billing.Usage
	lines    int
	uniq     uniq // checks the lines for repeated members
}

// lineError is the 400 of line n of the input file.
func lineError(n int, format string, a ...any) *apierror.Error {
	return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "invalid_batch_input",
		fmt.Sprintf("input_file_id: line %d: %s", n, fmt.Sprintf(format, a...))).WithParam("input_file_id")
}

// Create checks body (a POST /v1/batches) and the input file it names,
// reserves the batch's estimate through admit, submits it to the provider
// that serves its models, and stores it.
func (s *Service) Create(ctx context.Context, o Owner, body []byte, admit Admit) (*Batch, *apierror.Error) {
	if err := jsonlimit.Check(body, s.maxDepth); err != nil {
		return nil, apierror.InvalidBody(err)
	}
	if err := checkUnique(body, s.maxDepth); err != nil {
		return nil, apierror.InvalidRequest("", err.Error())
	}
	req := gjson.ParseBytes(body)
	if !req.IsObject() {
		return nil, apierror.InvalidRequest("", "the body must be a JSON object")
	}
	in, ep, win, meta := req.Get("input_file_id"), req.Get("endpoint"), req.Get("completion_window"), req.Get("metadata")
	if in.Type != gjson.String || in.Str == "" {
		return nil, apierror.InvalidRequest("input_file_id", "input_file_id: a file id is required")
	}
	if _, ok := kindOf[ep.String()]; !ok || ep.Type != gjson.String {
		return nil, apierror.InvalidRequest("endpoint", "endpoint: must be '/v1/chat/completions' or '/v1/embeddings'")
	}
	if win.Type != gjson.String || win.Str != "24h" {
		return nil, apierror.InvalidRequest("completion_window", "completion_window: must be '24h'")
	}
	if meta.Exists() && meta.Type != gjson.Null && !meta.IsObject() {
		return nil, apierror.InvalidRequest("metadata", "metadata: must be an object")
	}
	f, aerr := s.GetFile(ctx, o, in.Str)
	if aerr != nil {
		return nil, aerr.WithParam("input_file_id")
	}
	if f.Purpose != PurposeBatch {
		return nil, apierror.InvalidRequest("input_file_id", "input_file_id: the file's purpose is not 'batch'")
	}
	p, aerr := s.check(ctx, o, in.Str, ep.Str)
	if aerr != nil {
		return nil, aerr
	}
	var hold holds.Hold
	if admit != nil {
		h, err := admit(p.first, p.estimate)
		var ae *apierror.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		if err != nil {
			return nil, apierror.Internal()
		}
		hold = h
		defer func() {
			if hold != nil {
				hold.Cancel()
			}
		}()
	}
	now := s.now()
	d := &doc{Batch: Batch{ID: newID("batch_"), Object: "batch", Endpoint: ep.Str, InputFileID: in.Str,
		CompletionWindow: win.Str, Status: StatusValidating, CreatedAt: now.Unix(),
		RequestCounts: Counts{Total: p.lines}, Metadata: []byte("null")},
		KeyID: o.KeyID, Provider: p.provider.Name, Models: p.models}
	d.ExpiresAt = ptr(now.Add(24 * time.Hour).Unix())
	if meta.IsObject() {
		d.Metadata = []byte(meta.Raw)
	}
	up, aerr := s.submit(ctx, p, d)
	if aerr != nil {
		return nil, aerr
	}
	d.UpstreamID, d.Upstream = up.ID, up.Status
	if up.Status != "" && !terminal(up.Status) {
		d.Status = up.Status
	}
	rec, err := s.record(d, o.User)
	if err == nil {
		rec.Created, rec.Expires, rec.Due = now, now.Add(s.fileTTL), now.Add(s.poll)
		err = s.batches.Insert(context.WithoutCancel(ctx), rec)
	}
	if err != nil {
		s.log.Error("storing a batch", zap.String("batch", d.ID), zap.String("upstream", up.ID), zap.Error(err))
		return nil, apierror.Internal()
	}
	s.holds.Keep(d.ID, hold)
	hold = nil
	return &d.Batch, nil
}

// check reads input file id line by line and checks every line: a JSON
// object with a unique custom_id, method POST, url endpoint and a body
// naming a model o's key may use, of endpoint's kind, served by one
// provider (the first line's) over the OpenAI protocol.
func (s *Service) check(ctx context.Context, o Owner, id, endpoint string) (*plan, *apierror.Error) {
	m, err := s.media.Open(ctx, id)
	if err != nil {
		return nil, fileNotFound(id).WithParam("input_file_id")
	}
	defer m.Content.Close()
	p := &plan{models: map[string]string{}, upstream: map[string]string{}, routes: map[string]*providers.Route{}}
	ids := map[string]bool{}
	br := bufio.NewReaderSize(m.Content, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, defaultMaxLineBytes)
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if errors.Is(err, errLineTooLong) {
			return nil, lineError(n, "longer than %d bytes", defaultMaxLineBytes)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			s.log.Error("reading a batch's input", zap.String("file", id), zap.Error(err))
			return nil, apierror.Internal()
		}
		if strings.TrimSpace(string(line)) == "" {
			continue
		}
		if p.lines++; p.lines > s.maxLines {
			return nil, lineError(n, "a batch has at most %d requests", s.maxLines)
		}
		if aerr := s.checkLine(o, p, ids, n, line, endpoint); aerr != nil {
			return nil, aerr
		}
	}
	if p.lines == 0 {
		return nil, apierror.InvalidRequest("input_file_id", "input_file_id: the file has no requests")
	}
	return p, nil
}

// checkLine checks line n and adds it to p.
func (s *Service) checkLine(o Owner, p *plan, ids map[string]bool, n int, line []byte, endpoint string) *apierror.Error {
	if err := p.uniq.check(line, s.maxDepth); err != nil {
		return lineError(n, "%v", err)
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return lineError(n, "not a JSON object")
	}
	cid, method, url, body := v.Get("custom_id"), v.Get("method"), v.Get("url"), v.Get("body")
	switch {
	case cid.Type != gjson.String || cid.Str == "":
		return lineError(n, "custom_id must be a non-empty string")
	case ids[cid.Str]:
		return lineError(n, "custom_id '%s' is used by an earlier line", cid.Str)
	case method.Type != gjson.String || method.Str != http.MethodPost:
		return lineError(n, "method must be 'POST'")
	case url.Type != gjson.String || url.Str != endpoint:
		return lineError(n, "url must be '%s', the batch's endpoint", endpoint)
	case !body.IsObject():
		return lineError(n, "body must be a JSON object")
	}
	ids[cid.Str] = true
	model := body.Get("model")
	if model.Type != gjson.String || model.Str == "" {
		return lineError(n, "body.model must be a model id")
	}
	if !o.allows(model.Str) {
		return coded(lineError(n, "this key may not use model '%s'", model.Str), "model_not_allowed")
	}
	route, err := s.routes.Lookup(model.Str)
	if err != nil || route == nil || route.Kind != kindOf[endpoint] {
		return coded(lineError(n, "model '%s' does not serve %s", model.Str, endpoint), "model_not_found")
	}
	if route.Provider.Protocol != providers.ProtocolOpenAI {
		return lineError(n, "model '%s' is served by a provider without OpenAI batches", model.Str)
	}
	p.routes[model.Str] = route
	if p.provider == nil {
		p.provider, p.first, p.route = route.Provider, model.Str, route
	} else if route.Provider != p.provider {
		return lineError(n, "model '%s' is served by provider '%s', not '%s' as line 1's: a batch goes to one provider", model.Str, route.Provider.Name, p.provider.Name)
	}
	up := route.UpstreamModel
	if up == "" {
		up = model.Str
	}
	p.upstream[model.Str] = up
	if _, ok := p.models[up]; !ok {
		p.models[up] = model.Str
	}
	// Estimate: a token per 4 bytes of the body, and the output asked for
	// (or the model's ceiling).
	u := billing.Usage{Input: int64(len(body.Raw)+3) / 4}
	if endpoint == EndpointChat {
		out := body.Get("max_completion_tokens").Int()
		if out <= 0 {
			out = body.Get("max_tokens").Int()
		}
		if out <= 0 {
			out = route.MaxOutputTokens
		}
		u.Output = out
	}
	p.estimate = p.estimate.Add(u)
	return nil
}

// coded sets e's code.
func coded(e *apierror.Error, code string) *apierror.Error {
	e.Code = &code
	return e
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// unix is the time of Unix seconds sec.
func unix(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
