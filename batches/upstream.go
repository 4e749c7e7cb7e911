package batches

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/upstream"
)

// maxAnswer bounds an upstream JSON answer.
const maxAnswer = 1 << 20

// upBatch is what the gateway reads of an upstream batch.
type upBatch struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	OutputFileID string `json:"output_file_id"`
	ErrorFileID  string `json:"error_file_id"`
	Counts       Counts `json:"request_counts"`
	Errors       *BatchErrors
}

// upstreamError is an upstream answer other than a 2xx.
type upstreamError struct {
	status     int
	msg        string
	retryAfter time.Duration
}

func (e *upstreamError) Error() string { return fmt.Sprintf("status %d: %s", e.status, e.msg) }

// upTarget is where a batch's calls go: a provider, and the base URL and
// key of the attempt that took the batch.
type upTarget struct {
	provider  *providers.Provider
	base, key string
}

// attempt is the upstream of p's first base URL and key.
func attempt(p *providers.Provider) upTarget {
	u := upTarget{provider: p}
	if len(p.BaseURLs) > 0 {
		u.base = strings.TrimRight(p.BaseURLs[0], "/")
	}
	if len(p.APIKeys) > 0 {
		u.key = p.APIKeys[0]
	}
	return u
}

// call sends one request to p and returns the answer's body, read whole
// up to maxAnswer, or streams it to sink when sink is set.
func (s *Service) call(ctx context.Context, u upTarget, method, path, ctype string, body io.Reader, sink func(io.Reader) error) ([]byte, error) {
	p := u.provider
	req, err := upstream.NewRequest(ctx, p, providers.Attempt{BaseURL: u.base, APIKey: u.key}, method, path, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := upstream.Send(s.transport, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		msg := apierror.ReadUpstream(resp.StatusCode, data, p.APIKeys...).Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		ra := routing.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return nil, &upstreamError{status: resp.StatusCode, msg: msg, retryAfter: ra}
	}
	if sink != nil {
		return nil, sink(resp.Body)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(data) > maxAnswer {
		err = errors.New("the provider's answer is too large")
	}
	return data, err
}

// send uploads input file id, each line's model replaced by upModels',
// to u, and creates the batch there.
func (s *Service) send(ctx context.Context, u upTarget, upModels map[string]string, id, endpoint, window string) (*upBatch, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	m, err := s.media.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer m.Content.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := mw.WriteField("purpose", PurposeBatch)
		var fw io.Writer
		if err == nil {
			fw, err = mw.CreateFormFile("file", id+".jsonl")
		}
		if err == nil {
			err = rewrite(fw, m.Content, upModels)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	data, err := s.call(ctx, u, http.MethodPost, "/files", mw.FormDataContentType(), pr, nil)
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return nil, fmt.Errorf("uploading the input: %w", err)
	}
	upFile := gjson.GetBytes(data, "id").String()
	if upFile == "" {
		return nil, errors.New("the provider's file has no id")
	}
	req, _ := json.Marshal(map[string]string{"input_file_id": upFile, "endpoint": endpoint, "completion_window": window})
	if data, err = s.call(ctx, u, http.MethodPost, "/batches", "application/json", bytes.NewReader(req), nil); err != nil {
		return nil, fmt.Errorf("creating the batch: %w", err)
	}
	return parseBatch(data)
}

// parseBatch reads an upstream batch.
func parseBatch(data []byte) (*upBatch, error) {
	b := new(upBatch)
	if err := json.Unmarshal(data, b); err != nil || b.ID == "" || b.Status == "" {
		return nil, errors.New("the provider sent an unexpected batch")
	}
	if e := gjson.GetBytes(data, "errors"); e.IsObject() {
		b.Errors = new(BatchErrors)
		_ = json.Unmarshal([]byte(e.Raw), b.Errors)
	}
	return b, nil
}

// fetch reads upstream batch id.
func (s *Service) fetch(ctx context.Context, u upTarget, id string) (*upBatch, error) {
	data, err := s.call(ctx, u, http.MethodGet, "/batches/"+url.PathEscape(id), "", nil, nil)
	if err != nil {
		return nil, err
	}
	return parseBatch(data)
}

// rewrite copies the JSONL of r to w, each line's body.model replaced by
// its upstream model.
func rewrite(w io.Writer, r io.Reader, upstream map[string]string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, defaultMaxLineBytes)
		if len(bytes.TrimSpace(line)) > 0 {
			model := gjson.GetBytes(line, "body.model").String()
			if up, ok := upstream[model]; ok && up != model {
				if line, err = sjson.SetBytes(line, "body.model", up); err != nil {
					return err
				}
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errLineTooLong is a line longer than readLine's limit.
var errLineTooLong = errors.New("line too long")

// readLine reads the next line of br without its end, at most max bytes;
// at the end of the input it returns the last line with io.EOF.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit+1 {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		return line, err
	}
}

// uniq checks JSON texts for repeated members. Its zero value is ready
// to use; it keeps its maps from one text to the next.
type uniq struct {
	sc   jsonlimit.Scanner
	sets []map[string]struct{} // one per open object, reused
}

// check refuses b, a JSON text nested at most maxDepth levels, when an
// object of it, at any depth, has a member twice (keys compared
// unescaped).
func (u *uniq) check(b []byte, maxDepth int) error {
	u.sc.Reset(b, maxDepth)
	depth := 0 // open objects
	for {
		t, err := u.sc.Next()
		if err != nil {
			return fmt.Errorf("not valid JSON: %w", err)
		}
		switch t.Kind {
		case jsonlimit.Done:
			return nil
		case jsonlimit.BeginObject:
			if depth == len(u.sets) {
				u.sets = append(u.sets, map[string]struct{}{})
			}
			clear(u.sets[depth])
			depth++
		case jsonlimit.EndObject:
			depth--
		case jsonlimit.Key:
			raw := b[t.Start:t.End]
			var key string
			if bytes.IndexByte(raw, '\\') < 0 {
				key = string(raw[1 : len(raw)-1])
			} else if err := json.Unmarshal(raw, &key); err != nil {
				return fmt.Errorf("not valid JSON: %w", err)
			}
			set := u.sets[depth-1]
			if _, dup := set[key]; dup {
				return fmt.Errorf("member '%s' appears more than once", key)
			}
			set[key] = struct{}{}
		}
	}
}

// checkUnique is uniq.check with a fresh uniq.
func checkUnique(b []byte, maxDepth int) error {
	var u uniq
	return u.check(b, maxDepth)
}
