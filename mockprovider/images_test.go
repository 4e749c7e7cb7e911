package mockprovider

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// decodePNG decodes a PNG, failing the test when it is not one.
func decodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil || format != "png" {
		t.Fatalf("not a PNG (%s): %v", format, err)
	}
	return img
}

func TestImagesB64(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body string
		n    int
		w, h int
	}{
		{`{"model":"gpt-image-1","prompt":"a red fox"}`, 1, 64, 64},
		{`{"model":"gpt-image-1","prompt":"a red fox","n":3,"size":"1024x1536","quality":"high"}`, 3, 42, 64},
		{`{"model":"gpt-image-1","prompt":"a red fox","response_format":"url","size":"32x16"}`, 1, 32, 16},
		{`{"model":"dall-e-3","prompt":"a red fox","response_format":"b64_json","size":"1792x1024"}`, 1, 64, 36},
	} {
		status, _, body := post(t, base+"/images/generations", tc.body)
		if status != http.StatusOK {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		r := gjson.Parse(body)
		data := r.Get("data").Array()
		if r.Get("created").Int() == 0 || len(data) != tc.n {
			t.Fatalf("Test %d: %d images, want %d: %s", i, len(data), tc.n, body)
		}
		var first []byte
		for j, d := range data {
			if d.Get("url").Exists() {
				t.Errorf("Test %d: image %d has a url", i, j)
			}
			raw, err := base64.StdEncoding.DecodeString(d.Get("b64_json").Str)
			if err != nil {
				t.Fatalf("Test %d: b64_json: %v", i, err)
			}
			img := decodePNG(t, raw)
			if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
				t.Errorf("Test %d: image is %dx%d, want %dx%d", i, b.Dx(), b.Dy(), tc.w, tc.h)
			}
			if j == 0 {
				first = raw
			} else if bytes.Equal(first, raw) {
				t.Errorf("Test %d: images %d and 0 are identical", i, j)
			}
		}
		gptImage := strings.HasPrefix(gjson.Get(tc.body, "model").Str, "gpt-image")
		u := r.Get("usage")
		if gptImage != u.Exists() || (gptImage && (u.Get("input_tokens").Int() < 1 || u.Get("output_tokens").Int() < 1 ||
			u.Get("total_tokens").Int() != u.Get("input_tokens").Int()+u.Get("output_tokens").Int())) {
			t.Errorf("Test %d: usage %s", i, u.Raw)
		}
	}
}

func TestImagesDependOnPrompt(t *testing.T) {
	base := newServer(t, Config{})
	get := func(prompt string) []byte {
		_, _, body := post(t, base+"/images/generations", `{"model":"gpt-image-1","prompt":"`+prompt+`"}`)
		raw, _ := base64.StdEncoding.DecodeString(gjson.Get(body, "data.0.b64_json").Str)
		return raw
	}
	a, again, b := get("a cat"), get("a cat"), get("a dog")
	if !bytes.Equal(a, again) || bytes.Equal(a, b) {
		t.Errorf("same prompt gives equal images %v, different prompts give equal images %v", bytes.Equal(a, again), bytes.Equal(a, b))
	}
}

func TestImagesURL(t *testing.T) {
	srv := httptest.NewServer(New(Config{APIKey: testKey}))
	t.Cleanup(srv.Close)
	for i, tc := range []struct {
		path   string
		header []string
		prefix string
	}{
		{path: "/mock/v1/images/generations", prefix: srv.URL + "/mock/v1/files/"},
		{path: "/v1/images/generations", prefix: srv.URL + "/v1/files/"},
		{path: "/v1/images/generations", header: []string{"X-Forwarded-Prefix", "/mock"}, prefix: srv.URL + "/mock/v1/files/"},
	} {
		status, _, body := post(t, srv.URL+tc.path, `{"model":"dall-e-3","prompt":"a lighthouse","size":"1024x1024","n":2}`, tc.header...)
		if status != http.StatusOK {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		for j, d := range gjson.Get(body, "data").Array() {
			url := d.Get("url").Str
			if !strings.HasPrefix(url, tc.prefix) || d.Get("b64_json").Exists() {
				t.Fatalf("Test %d: image %d: url %q, want prefix %q", i, j, url, tc.prefix)
			}
			resp, err := http.Get(url) // no API key: file URLs are pre-signed
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
				t.Fatalf("Test %d: GET %s: status %d, type %q", i, url, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if b := decodePNG(t, buf.Bytes()).Bounds(); b.Dx() != maxImageSide || b.Dy() != maxImageSide {
				t.Errorf("Test %d: image is %v", i, b)
			}
		}
	}
}

func TestImagesOriginalPath(t *testing.T) {
	srv := httptest.NewServer(New(Config{OriginalPath: func(*http.Request) string { return "/public/v1/images/generations" }}))
	t.Cleanup(srv.Close)
	_, _, body := post(t, srv.URL+"/v1/images/generations", `{"model":"mock-image","prompt":"x"}`)
	if url := gjson.Get(body, "data.0.url").Str; !strings.HasPrefix(url, srv.URL+"/public/v1/files/img-") {
		t.Errorf("url %q", url)
	}
}

func TestImagesErrors(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body   string
		status int
		param  string
		code   string
	}{
		{`{"model":"dall-e-3","prompt":"something forbidden"}`, http.StatusBadRequest, "", "content_policy_violation"},
		{`{"model":"dall-e-3","prompt":"x","size":"big"}`, http.StatusBadRequest, "size", ""},
		{`{"model":"dall-e-3","prompt":"x","size":"0x10"}`, http.StatusBadRequest, "size", ""},
		{`{"model":"dall-e-3","prompt":"x","n":11}`, http.StatusBadRequest, "n", ""},
		{`{"model":"dall-e-3","prompt":"x","n":0}`, http.StatusBadRequest, "n", ""},
		{`{"model":"dall-e-3"}`, http.StatusBadRequest, "prompt", ""},
		{`{"model":"dall-e-3","prompt":"x","response_format":"gif"}`, http.StatusBadRequest, "response_format", ""},
		{`{"model":"dall-e-3","prompt":"x","mock_status":500}`, http.StatusInternalServerError, "", ""},
	} {
		status, _, body := post(t, base+"/images/generations", tc.body)
		e := gjson.Get(body, "error")
		if status != tc.status || e.Get("param").Str != tc.param || e.Get("code").Str != tc.code || e.Get("message").Str == "" {
			t.Errorf("Test %d: status %d, body %s", i, status, body)
		}
	}
	for i, name := range []string{"nope.png", "img-zz-10x10.png", "img-1-65x10.png", "img-1-10x10.jpg"} {
		if status, _, _ := do(t, http.MethodGet, base+"/files/"+name, "", ""); status != http.StatusNotFound {
			t.Errorf("Test %d: GET file %s: status %d, want 404", i, name, status)
		}
	}
}
