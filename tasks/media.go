package tasks

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// mediaPrefix holds re-hosted files: "m/<id>" → content type and bytes.
const mediaPrefix = "m/"

// mediaIDLen is the length of a media id: 20 random bytes in base32.
const mediaIDLen = 32

// Media returns a re-hosted file by the id at the end of its URL, or
// store.ErrNotFound once it expired (or never existed).
func (s *Service) Media(ctx context.Context, id string) (contentType string, data []byte, err error) {
	if !validMediaID(id) {
		return "", nil, store.ErrNotFound
	}
	v, err := s.store.Get(ctx, []byte(mediaPrefix+id))
	if err != nil {
		return "", nil, err
	}
	return decodeMedia(v)
}

// validMediaID reports whether id could have been issued by putMedia.
func validMediaID(id string) bool {
	if len(id) != mediaIDLen {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// encodeMedia stores a content type (at most 255 bytes) before the data.
func encodeMedia(contentType string, data []byte) []byte {
	v := make([]byte, 0, 1+len(contentType)+len(data))
	v = append(v, byte(len(contentType)))
	v = append(v, contentType...)
	return append(v, data...)
}

func decodeMedia(v []byte) (string, []byte, error) {
	if len(v) == 0 || len(v) < 1+int(v[0]) {
		return "", nil, errors.New("corrupt media record")
	}
	n := int(v[0])
	return string(v[1 : 1+n]), v[1+n:], nil
}

// putMedia stores data under a fresh id and returns the id.
func (s *Service) putMedia(ctx context.Context, contentType string, data []byte) (string, error) {
	id, err := randomID(20)
	if err != nil {
		return "", err
	}
	if len(contentType) > 255 {
		contentType = "application/octet-stream"
	}
	return id, s.store.Set(ctx, []byte(mediaPrefix+id), encodeMedia(contentType, data), s.mediaTTL)
}

// deleteMedia removes files that ended up unused.
func (s *Service) deleteMedia(ctx context.Context, ids []string) {
	for _, id := range ids {
		_ = s.store.Delete(ctx, []byte(mediaPrefix+id))
	}
}

// rehost turns the media an upstream delivered into the URLs the client
// gets: long-lived upstream URLs as they are, everything else downloaded
// (or decoded) and stored. It returns the URLs and the ids it stored.
func (s *Service) rehost(ctx context.Context, c *call, mediaBase string, refs []mediaRef) ([]string, []string, error) {
	urls := make([]string, 0, len(refs))
	var ids []string
	for _, m := range refs {
		if m.keep {
			urls = append(urls, m.url)
			continue
		}
		data, ctype := m.data, ""
		if data == nil {
			var err error
			if data, ctype, err = s.download(ctx, c, m); err != nil {
				s.deleteMedia(context.WithoutCancel(ctx), ids)
				return nil, nil, err
			}
		}
		if int64(len(data)) > s.maxMedia {
			s.deleteMedia(context.WithoutCancel(ctx), ids)
			return nil, nil, tooLarge()
		}
		if !mediaType(ctype) {
			ctype = http.DetectContentType(data)
		}
		id, err := s.putMedia(ctx, ctype, data)
		if err != nil {
			s.deleteMedia(context.WithoutCancel(ctx), ids)
			return nil, nil, err
		}
		ids = append(ids, id)
		urls = append(urls, strings.TrimRight(mediaBase, "/")+"/"+id)
	}
	return urls, ids, nil
}

// download fetches a generated file, at most maxMedia bytes.
func (s *Service) download(ctx context.Context, c *call, m mediaRef) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, "", &upstreamError{name: errUpstream, msg: "the provider returned an invalid file URL", permanent: true, cause: err}
	}
	for k, v := range m.header {
		req.Header[k] = v
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, "", transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := httpError(resp.StatusCode, resp.Header, "", "downloading the generated file failed with HTTP "+resp.Status)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			e.permanent = false
		}
		return nil, "", e
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.maxMedia+1))
	if err != nil {
		return nil, "", transportError(ctx, err)
	}
	if int64(len(data)) > s.maxMedia {
		return nil, "", tooLarge()
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// mediaType reports whether a Content-Type header names an image or video.
func mediaType(ct string) bool {
	t, _, err := mime.ParseMediaType(ct)
	return err == nil && (strings.HasPrefix(t, "image/") || strings.HasPrefix(t, "video/"))
}

func tooLarge() *upstreamError {
	return &upstreamError{name: errUpstream, msg: "the generated file exceeds the gateway's size limit", permanent: true}
}

// defaultMediaTTL is how long re-hosted files stay available.
const defaultMediaTTL = 24 * time.Hour
