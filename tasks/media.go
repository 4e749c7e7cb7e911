package tasks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/upstream"
)

// mediaIDLen is the length of a media id: 20 random bytes in base32.
const mediaIDLen = 32

// sniffLen is how much of a file http.DetectContentType looks at.
const sniffLen = 512

// Media opens a re-hosted file by the id at the end of its URL, or returns
// store.ErrNotFound once it expired (or never existed). The caller closes
// its Content.
func (s *Service) Media(ctx context.Context, id string) (*store.Media, error) {
	if !validMediaID(id) {
		return nil, store.ErrNotFound
	}
	return s.media.Open(ctx, id)
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

// putMedia streams r into the media store under a fresh id and returns the
// id. The file must be an image, or a video, as kind says, of one of
// safeMediaTypes: the type sniffed from its first bytes when it is one of
// them, else contentType, the upstream's, when it is one of them and the
// bytes are of no type that is recognized and unsafe (HTML, text, JSON,
// PDF, ...). Anything else fails the task: a provider that answers a
// generation with a document has not delivered an image. A file longer
// than the media limit is refused while it streams.
func (s *Service) putMedia(ctx context.Context, kind, contentType string, r io.Reader) (string, error) {
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	head = head[:n]
	contentType, err = mediaType(kind, contentType, head)
	if err != nil {
		return "", err
	}
	id, err := randomID(20)
	if err != nil {
		return "", err
	}
	_, err = s.media.Put(ctx, id, io.MultiReader(bytes.NewReader(head), r), store.MediaPut{
		ContentType: contentType,
		Expires:     s.now().Add(s.mediaTTL),
		MaxBytes:    s.maxMedia,
	})
	if errors.Is(err, store.ErrTooLarge) {
		return "", tooLarge()
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

// mediaType returns the type a file of kind (image or video) is stored
// as, from its declared type and its first bytes, or the error that
// fails the task when it is not a safe type of that kind.
func mediaType(kind, declared string, head []byte) (string, error) {
	sniffed := http.DetectContentType(head)
	t, ok := SafeMediaType(sniffed)
	if !ok && sniffed == octetStream {
		// Unrecognized bytes (AVIF, QuickTime, ...): trust the label.
		t, ok = SafeMediaType(declared)
	}
	if ok && (kind == "" || strings.HasPrefix(t, kind+"/")) {
		return t, nil
	}
	got, _, _ := strings.Cut(sniffed, ";")
	if ok {
		got = t
	}
	what := "an image"
	if kind == providers.KindVideo {
		what = "a video"
	}
	return "", &upstreamError{name: errUpstream, permanent: true,
		msg: "the provider's file is not " + what + " of a type the gateway serves (it is " + got + ")"}
}

// deleteMedia removes files that ended up unused.
func (s *Service) deleteMedia(ctx context.Context, ids []string) {
	for _, id := range ids {
		if err := s.media.Delete(ctx, id); err != nil {
			s.log.Warn("deleting unused media", zap.String("media", id), zap.Error(err))
		}
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
		var id string
		var err error
		if m.data != nil {
			id, err = s.putMedia(ctx, c.kind, "", bytes.NewReader(m.data))
		} else {
			id, err = s.download(ctx, c, m)
		}
		if err != nil {
			s.deleteMedia(context.WithoutCancel(ctx), ids)
			return nil, nil, err
		}
		ids = append(ids, id)
		urls = append(urls, strings.TrimRight(mediaBase, "/")+"/"+id)
	}
	return urls, ids, nil
}

// download streams a generated file into the media store, at most maxMedia
// bytes, and returns its id. The file's URL, and each redirect, must be
// http or https, and the connections go only where the fetch guard lets
// them: a refused destination fails the task.
func (s *Service) download(ctx context.Context, c *call, m mediaRef) (string, error) {
	dctx := withOrigins(ctx, append([]string{c.attempt.BaseURL}, c.p.BaseURLs...)...)
	req, err := m.request(dctx, c)
	if err == nil {
		err = checkScheme(req.URL)
	}
	if err != nil {
		return "", s.refusedDownload(c, err, &upstreamError{name: errUpstream, msg: "the provider returned an invalid file URL", permanent: true, cause: err})
	}
	// What the request carries now is its credentials, which stay on
	// the provider's scheme, host and port.
	resp, err := s.mediaClient(req.Header.Clone()).Do(req)
	if err != nil {
		return "", s.refusedDownload(c, err, transportError(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := httpError(resp.StatusCode, resp.Header, "", "downloading the generated file failed with HTTP "+resp.Status)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			e.permanent = false
		}
		return "", e
	}
	if resp.ContentLength > s.maxMedia {
		return "", tooLarge()
	}
	body := &readErr{r: resp.Body}
	id, err := s.putMedia(ctx, c.kind, resp.Header.Get("Content-Type"), body)
	if err != nil && body.err != nil {
		// The download broke off, rather than the store failing.
		return "", transportError(ctx, body.err)
	}
	return id, err
}

// request is the download of m: a GET of its url, or of its path below
// the call's base URL with the provider's credentials.
func (m mediaRef) request(ctx context.Context, c *call) (*http.Request, error) {
	if m.path != "" {
		return upstream.NewRequest(ctx, c.p, c.attempt, http.MethodGet, m.path, nil)
	}
	return http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
}

// refusedDownload returns the permanent error of a download the fetch
// guard refused, logged with the refused destination, or otherwise
// other.
func (s *Service) refusedDownload(c *call, err error, other *upstreamError) *upstreamError {
	re := refused(err)
	if re == nil {
		return other
	}
	s.log.Warn("refused to download a provider's file", zap.String("provider", c.provider),
		zap.String("destination", re.dest), zap.String("reason", re.reason))
	return &upstreamError{name: errUpstream, permanent: true,
		msg: "the provider's file URL leads to a destination the gateway does not download from"}
}

// readErr remembers the error that ended its reads, other than io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

func tooLarge() *upstreamError {
	return &upstreamError{name: errUpstream, msg: "the generated file exceeds the gateway's size limit", permanent: true}
}

// defaultMediaTTL is how long re-hosted files stay available.
const defaultMediaTTL = 24 * time.Hour
