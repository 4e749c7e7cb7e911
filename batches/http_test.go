package batches

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
)

// recorder is a Responder that answers as the air_batches handler does,
// and keeps the refusals and counted statuses.
type recorder struct {
	refused []*apierror.Error
	counted []int
}

func (rc *recorder) Refuse(w http.ResponseWriter, _ *http.Request, err error) error {
	var aerr *apierror.Error
	if errors.As(err, &aerr) {
		rc.refused = append(rc.refused, aerr)
		w.WriteHeader(aerr.Status)
	}
	return nil
}

func (rc *recorder) Done(w http.ResponseWriter, r *http.Request, status int, v any) error {
	rc.Count(r, status)
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

func (rc *recorder) Count(_ *http.Request, status int) { rc.counted = append(rc.counted, status) }

// form builds a multipart body of parts, each a field name and content
// (a "file" part gets a file name).
func form(t *testing.T, parts ...[2]string) (string, *bytes.Buffer) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var err error
		var w interface{ Write([]byte) (int, error) }
		if p[0] == "file" {
			w, err = mw.CreateFormFile("file", "in.jsonl")
		} else {
			w, err = mw.CreateFormField(p[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p[1]))
	}
	_ = mw.Close()
	return mw.FormDataContentType(), &b
}

// TestServeFilesUpload: an upload takes a purpose and a file, once each,
// in either order, within the file size limit; any other upload is
// refused with the error a client can act on, and leaves no file behind.
func TestServeFilesUpload(t *testing.T) {
	lines := chatLines(1)
	for _, tc := range []struct {
		name   string
		parts  [][2]string
		ctype  string // in place of the form's
		status int
		param  string
	}{
		{name: "purpose first", parts: [][2]string{{"purpose", "batch"}, {"file", lines}}, status: http.StatusOK},
		{name: "file first", parts: [][2]string{{"file", lines}, {"purpose", "batch"}, {"other", "x"}}, status: http.StatusOK},
		{name: "not multipart", parts: [][2]string{{"purpose", "batch"}}, ctype: "application/json", status: http.StatusUnsupportedMediaType},
		{name: "no file", parts: [][2]string{{"purpose", "batch"}}, status: http.StatusBadRequest, param: "file"},
		{name: "wrong purpose", parts: [][2]string{{"file", lines}, {"purpose", "fine-tune"}}, status: http.StatusBadRequest, param: "purpose"},
		{name: "file twice", parts: [][2]string{{"file", lines}, {"file", lines}, {"purpose", "batch"}}, status: http.StatusBadRequest, param: "file"},
		{name: "too large", parts: [][2]string{{"purpose", "batch"}, {"file", strings.Repeat(lines, 2000)}}, status: http.StatusRequestEntityTooLarge, param: "file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEnv(t).service(t, Config{MaxFileBytes: 4 << 10})
			ctype, body := form(t, tc.parts...)
			if tc.ctype != "" {
				ctype = tc.ctype
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/files", body)
			r.Header.Set("Content-Type", ctype)
			w := httptest.NewRecorder()
			rc := &recorder{}
			if err := s.ServeFiles(w, r, rc, func() *apierror.Error { return nil }, alice, ""); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.status {
				t.Fatalf("status %d (%v), want %d", w.Code, rc.refused, tc.status)
			}
			if tc.param != "" && (len(rc.refused) != 1 || rc.refused[0].Param == nil || *rc.refused[0].Param != tc.param) {
				t.Errorf("refusals %v, want one about %q", rc.refused, tc.param)
			}
			l, aerr := s.ListFiles(context.Background(), alice, "", 10)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.status == http.StatusOK]; len(l.Data) != want {
				t.Errorf("%d files stored, want %d", len(l.Data), want)
			}
		})
	}
}

// TestServeFilesGuardAndMethods: an upload waits for the storage, and a
// path answers 405 with its methods in Allow.
func TestServeFilesGuardAndMethods(t *testing.T) {
	s := newEnv(t).service(t, Config{})
	down := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "storage_unavailable", "down")
	ctype, body := form(t, [2]string{"purpose", "batch"}, [2]string{"file", chatLines(1)})
	r := httptest.NewRequest(http.MethodPost, "/v1/files", body)
	r.Header.Set("Content-Type", ctype)
	w, rc := httptest.NewRecorder(), &recorder{}
	_ = s.ServeFiles(w, r, rc, func() *apierror.Error { return down }, alice, "")
	if w.Code != http.StatusServiceUnavailable || len(rc.refused) != 1 || rc.refused[0] != down {
		t.Errorf("upload with the storage down: %d %v, want the guard's 503", w.Code, rc.refused)
	}
	for _, tc := range []struct{ method, rest, allow string }{
		{http.MethodPut, "", "GET, POST"},
		{http.MethodPost, "file-x", "GET, DELETE"},
	} {
		w := httptest.NewRecorder()
		_ = s.ServeFiles(w, httptest.NewRequest(tc.method, "/v1/files/"+tc.rest, nil), &recorder{}, nil, alice, tc.rest)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != tc.allow {
			t.Errorf("%s /v1/files/%s: %d Allow %q, want 405 Allow %q", tc.method, tc.rest, w.Code, w.Header().Get("Allow"), tc.allow)
		}
	}
}
