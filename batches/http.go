package batches

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/tasks"
)

// Responder is what the Files API's handler needs of the server it runs
// in: its refusals and answers, each counted in the metrics.
type Responder interface {
	// Refuse answers a request the gateway refuses by itself with err,
	// and counts it as a refusal; it returns the error the handler
	// returns.
	Refuse(w http.ResponseWriter, r *http.Request, err error) error
	// Done answers v as JSON with status, and counts the request.
	Done(w http.ResponseWriter, r *http.Request, status int, v any) error
	// Count counts a request the handler answered itself with status.
	Count(r *http.Request, status int)
}

// MethodNotAllowed answers a method the path does not take: 405, and the
// methods it takes in Allow.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, rs Responder, allow string) error {
	w.Header().Set("Allow", allow)
	return rs.Refuse(w, r, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed",
		"use "+allow+" on "+r.URL.Path))
}

// ServeFiles serves /v1/files[/{id}[/content]] for o, rest being the
// path after /files; guard refuses an upload while the storage cannot
// take records.
func (s *Service) ServeFiles(w http.ResponseWriter, r *http.Request, rs Responder, guard func() *apierror.Error, o Owner, rest string) error {
	id, sub, _ := strings.Cut(rest, "/")
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	ctx := r.Context()
	switch {
	case id == "" && r.Method == http.MethodPost:
		if aerr := guard(); aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		f, aerr := s.upload(w, r, o)
		if aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		return rs.Done(w, r, http.StatusOK, f)
	case id == "" && read:
		limit, aerr := tasks.ParseLimit(r.URL.Query().Get("limit"))
		if aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		l, aerr := s.ListFiles(ctx, o, r.URL.Query().Get("after"), limit)
		if aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		return rs.Done(w, r, http.StatusOK, l)
	case id == "":
		return MethodNotAllowed(w, r, rs, "GET, POST")
	case sub == "content" && read:
		m, aerr := s.OpenFile(ctx, o, id)
		if aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		defer m.Content.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rs.Count(r, http.StatusOK)
		http.ServeContent(w, r, "", m.Created, m.Content)
		return nil
	case sub != "":
		return rs.Refuse(w, r, apierror.NotFound("unknown_url", "no such path: "+r.URL.Path))
	case read:
		f, aerr := s.GetFile(ctx, o, id)
		if aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		return rs.Done(w, r, http.StatusOK, f)
	case r.Method == http.MethodDelete:
		if aerr := s.DeleteFile(ctx, o, id); aerr != nil {
			return rs.Refuse(w, r, aerr)
		}
		return rs.Done(w, r, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
	default:
		return MethodNotAllowed(w, r, rs, "GET, DELETE")
	}
}

// maxFormField bounds a multipart form field other than the file.
const maxFormField = 1 << 10

// upload reads a multipart upload, streaming its file part to the store:
// a purpose field and a file part, each once, in any order.
func (s *Service) upload(w http.ResponseWriter, r *http.Request, o Owner) (*File, *apierror.Error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return nil, apierror.New(http.StatusUnsupportedMediaType, apierror.TypeInvalidRequest, "invalid_request",
			"the body must be multipart/form-data with a purpose field and a file")
	}
	// The multipart framing around the file is small: a body much larger
	// than the file limit is cut off.
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxFileBytes()+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, apierror.InvalidRequest("", "the body is not a valid multipart form: "+err.Error())
	}
	var f *File
	var purpose string
	seen := map[string]bool{}
	fail := func(aerr *apierror.Error) (*File, *apierror.Error) {
		if f != nil {
			_ = s.DeleteFile(context.WithoutCancel(r.Context()), o, f.ID)
		}
		return nil, aerr
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeInvalidRequest, "file_too_large",
				"the upload is larger than the file size limit").WithParam("file"))
		}
		if err != nil {
			return fail(apierror.InvalidRequest("", "the body is not a valid multipart form: "+err.Error()))
		}
		name := part.FormName()
		if name != "file" && name != "purpose" {
			_ = part.Close()
			continue
		}
		if seen[name] {
			return fail(apierror.InvalidRequest(name, name+": appears more than once"))
		}
		seen[name] = true
		if name == "purpose" {
			b, err := io.ReadAll(io.LimitReader(part, maxFormField))
			if err != nil {
				return fail(apierror.InvalidRequest("purpose", "purpose: could not be read"))
			}
			purpose = string(b)
			continue
		}
		// The purpose may follow the file: the file is stored as a batch
		// input and deleted if the purpose says otherwise.
		var aerr *apierror.Error
		if f, aerr = s.Upload(r.Context(), o, PurposeBatch, part.FileName(), part); aerr != nil {
			return fail(aerr)
		}
	}
	switch {
	case !seen["file"]:
		return fail(apierror.InvalidRequest("file", "file: a file part is required"))
	case purpose != PurposeBatch:
		return fail(apierror.InvalidRequest("purpose", "purpose: must be 'batch'"))
	}
	return f, nil
}
