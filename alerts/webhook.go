package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Payload formats of a webhook.
const (
	// FormatJSON posts the Event as JSON.
	FormatJSON = "json"
	// FormatSlack posts a Slack incoming-webhook message ({"text": …}).
	FormatSlack = "slack"
)

// SignatureHeader carries a delivery's signature: "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<body>" under the webhook's secret>".
const SignatureHeader = "X-Air-Signature"

// IDHeader carries the event's dedupe id.
const IDHeader = "X-Air-Event-Id"

// Webhook is one delivery target.
type Webhook struct {
	// Name identifies the webhook in the console and the logs (its URL
	// may hold a token, so it is never shown).
	Name string
	// URL is where events are posted.
	URL string
	// Secret signs the body; empty sends no signature.
	Secret string
	// Events, if not empty, are the kinds this webhook receives.
	Events []string
	// Format is FormatJSON (default) or FormatSlack.
	Format string
}

// Wants reports whether w receives events of kind.
func (w *Webhook) Wants(kind string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, k := range w.Events {
		if k == kind {
			return true
		}
	}
	return false
}

// Sign returns the signature header value of body sent at t under secret.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

// mac is the hex HMAC-SHA256 of "<ts>.<body>".
func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header against body and secret, and that its
// time is within tolerance of now (a receiver's check against replays).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("malformed signature header")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("signature timestamp outside the tolerance")
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, ts, body))) {
		return errors.New("signature mismatch")
	}
	return nil
}

// Body renders e in w's format.
func (w *Webhook) Body(e *Event) ([]byte, error) {
	if w.Format == FormatSlack {
		return json.Marshal(map[string]string{"text": fmt.Sprintf("[caddy-air] %s: %s (%s)", e.Kind, e.Message, e.ID)})
	}
	return json.Marshal(e)
}

// Sender posts events to webhooks.
type Sender struct {
	// Client sends the requests; nil: a client with a 10 s timeout.
	Client *http.Client
	// MaxTries bounds the attempts of one delivery. Default 5.
	MaxTries uint
	// MaxElapsed bounds the time spent on one delivery. Default 1 min.
	MaxElapsed time.Duration
	// InitialInterval is the first backoff. Default 500 ms.
	InitialInterval time.Duration
	// Now replaces the clock in tests.
	Now func() time.Time
}

// Send delivers e to w, retrying failed attempts (network errors, 408,
// 429 and 5xx) with exponential backoff. It returns the number of
// attempts and the last error, nil once a 2xx answer came. Errors never
// include the URL (it may hold a token) or the secret.
func (s *Sender) Send(ctx context.Context, w *Webhook, e *Event) (int, error) {
	body, err := w.Body(e)
	if err != nil {
		return 0, err
	}
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = orDefault(s.InitialInterval, 500*time.Millisecond)
	tries := 0
	_, err = backoff.Retry(ctx, func() (struct{}, error) {
		tries++
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
		if err != nil {
			return struct{}{}, backoff.Permanent(errors.New("bad webhook url"))
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "caddy-air-alerts")
		req.Header.Set(IDHeader, e.ID)
		if w.Secret != "" {
			req.Header.Set(SignatureHeader, Sign(w.Secret, now(), body))
		}
		resp, err := client.Do(req)
		if err != nil {
			return struct{}{}, errors.New("webhook unreachable: " + scrub(err))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return struct{}{}, nil
		case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			return struct{}{}, fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		return struct{}{}, backoff.Permanent(fmt.Errorf("webhook answered %d", resp.StatusCode))
	}, backoff.WithBackOff(bo), backoff.WithMaxTries(s.maxTries()), backoff.WithMaxElapsedTime(orDefault(s.MaxElapsed, time.Minute)))
	return tries, err
}

// scrub returns err's text without the request's URL: url.Error names it.
func scrub(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return "request failed"
}

// orDefault returns d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// maxTries is MaxTries or its default.
func (s *Sender) maxTries() uint {
	if s.MaxTries == 0 {
		return 5
	}
	return s.MaxTries
}
