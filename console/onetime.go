package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The key form is Post/Redirect/Get: a post carries a one-time form
// token, mints the key, and redirects to the keys page, which shows the
// new secret once from a short-lived encrypted cookie. A refresh of the
// page shows no secret and mints nothing, and a second post of the same
// form (a double click, a refresh of the post, a replay) mints nothing
// either.

// Bounds of the one-time form tokens.
const (
	// formTokenTTL is how long a rendered form may be posted.
	formTokenTTL = time.Hour
	// maxUsedForms bounds the used tokens remembered; beyond it, tokens
	// are refused until old ones expire, rather than remembered in
	// unbounded memory (about 100 bytes each).
	maxUsedForms = 1 << 17
	// flashTTL is how long the cookie holding a new key's secret lives:
	// the redirect that shows it follows at once.
	flashTTL = time.Minute
	// flashCookie names that cookie.
	flashCookie = "air_console_new_key"
)

// errFormUsed reports a form token already posted.
var errFormUsed = errors.New("this form was already sent")

// onceForms remembers the one-time form tokens already used, until they
// expire.
type onceForms struct {
	mu   sync.Mutex
	used map[string]time.Time // token → when it expires
}

// formToken returns a fresh one-time token of user's key form: a random
// nonce and its time, signed with the CSRF key for user.
func (h *Handler) formToken(user string) string {
	var b [24]byte
	_, _ = rand.Read(b[:16])
	binary.BigEndian.PutUint64(b[16:], uint64(h.cfg.Now().Unix()))
	body := base64.RawURLEncoding.EncodeToString(b[:])
	return body + "." + h.formMAC(user, body)
}

// formMAC signs a form token's body for user.
func (h *Handler) formMAC(user, body string) string {
	m := hmac.New(sha256.New, h.cfg.CSRFKey)
	m.Write([]byte("air-console-form\x00"))
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// useFormToken checks that tok is a token of user's form that is not
// expired and was not used before, and marks it used. It returns
// errFormUsed for a token posted before.
func (h *Handler) useFormToken(user, tok string) error {
	body, mac, ok := strings.Cut(tok, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(h.formMAC(user, body))) {
		return errors.New("the form's token is missing or wrong; reload the page")
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) != 24 {
		return errors.New("the form's token is malformed; reload the page")
	}
	now := h.cfg.Now()
	expires := time.Unix(int64(binary.BigEndian.Uint64(raw[16:])), 0).Add(formTokenTTL)
	if !now.Before(expires) {
		return errors.New("the form has expired; reload the page")
	}
	f := &h.forms
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used == nil {
		f.used = map[string]time.Time{}
	}
	if _, dup := f.used[body]; dup {
		return errFormUsed
	}
	if len(f.used) >= maxUsedForms {
		for k, exp := range f.used {
			if !now.Before(exp) {
				delete(f.used, k)
			}
		}
		if len(f.used) >= maxUsedForms {
			return errors.New("too many forms were sent in the last hour; try again later")
		}
	}
	f.used[body] = expires
	return nil
}

// flashAEAD is the cipher of the new-key cookie, keyed from the CSRF key
// (every instance behind one address has the same one).
func (h *Handler) flashAEAD() cipher.AEAD {
	m := hmac.New(sha256.New, h.cfg.CSRFKey)
	m.Write([]byte("air-console-flash"))
	block, _ := aes.NewCipher(m.Sum(nil))
	aead, _ := cipher.NewGCM(block)
	return aead
}

// setFlash sets the cookie that shows user's new key secret on the next
// visit of page (the user's keys page, "/keys", or the operators',
// "/operators/keys"): encrypted and bound to user, for flashTTL, sent only
// to that page and never to scripts.
func (h *Handler) setFlash(w http.ResponseWriter, r *http.Request, page, user, secret, keyID string) {
	aead := h.flashAEAD()
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(h.cfg.Now().Add(flashTTL).Unix()))
	plain := append(exp[:], keyID+"\x00"+secret...)
	sealed := aead.Seal(nonce, nonce, plain, []byte(user))
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString(sealed),
		Path: h.cfg.Prefix + page, MaxAge: int(flashTTL / time.Second), HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode})
}

// takeFlash returns the new key's secret and id that the cookie of r
// holds for user on page, and clears the cookie; ok is false without one
// that decrypts for user and is not expired.
func (h *Handler) takeFlash(w http.ResponseWriter, r *http.Request, page, user string) (secret, keyID string, ok bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", "", false
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: h.cfg.Prefix + page, MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	aead := h.flashAEAD()
	if err != nil || len(sealed) < aead.NonceSize() {
		return "", "", false
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(user))
	if err != nil || len(plain) < 8 {
		return "", "", false
	}
	if !h.cfg.Now().Before(time.Unix(int64(binary.BigEndian.Uint64(plain[:8])), 0)) {
		return "", "", false
	}
	keyID, secret, ok = strings.Cut(string(plain[8:]), "\x00")
	return secret, keyID, ok
}
