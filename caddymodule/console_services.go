package caddymodule

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/tasks"
)

// consoleKeyID is the key id under which playground requests are billed
// to the signed-in user.
const consoleKeyID = "console"

// consoleServices implements the console's services with the running air
// app's: the same keys, ledger, budgets and task services the admin API
// and `caddy air` use.
type consoleServices struct {
	app  *App
	chat *Chat
}

// errConsoleNotStarted is returned before the app has started.
var errConsoleNotStarted = errors.New("the air app is not started")

// state returns the started state.
func (s consoleServices) state() (*gateway.Shared, error) {
	st := s.app.live.Shared()
	if st == nil {
		return nil, errConsoleNotStarted
	}
	return st, nil
}

// flushed returns the started state once its ledger has written every
// record it queued, so that what the console reads next counts them.
func (s consoleServices) flushed(ctx context.Context) (*gateway.Shared, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	if err := st.Ledger.Flush(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// consoleKey converts a key for the console, with its limits.
func consoleKey(st *gateway.Shared, k *keys.Key) console.Key {
	return console.Key{ID: k.ID, User: k.User, Name: k.Name, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt,
		LastUsedAt: k.LastUsedAt, Models: k.Models, State: k.State, Limits: st.Budgets.Status(billing.ScopeKey, k.ID).Limits}
}

// List implements console.KeyService.
func (s consoleServices) List(ctx context.Context, user string) ([]console.Key, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	if user == "" {
		return nil, errors.New("listing keys needs a user")
	}
	list, err := st.Keys.List(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]console.Key, 0, len(list))
	for _, k := range list {
		if k.User == user {
			out = append(out, consoleKey(st, k))
		}
	}
	return out, nil
}

// Create implements console.KeyService. The key service's refusals (a
// bad glob, a bad limit, an expiry in the past) are the user's to fix.
func (s consoleServices) Create(ctx context.Context, user string, o console.NewKey) (string, console.Key, error) {
	st, err := s.state()
	if err != nil {
		return "", console.Key{}, err
	}
	if user == "" {
		return "", console.Key{}, errors.New("creating a key needs a user")
	}
	secret, k, err := st.CreateKey(ctx, keys.CreateOptions{User: user, Name: o.Name, ExpiresAt: o.ExpiresAt, Models: o.Models, Limit: o.Limit})
	if err != nil {
		return "", console.Key{}, console.Invalid(err)
	}
	return secret, consoleKey(st, k), nil
}

// Revoke implements console.KeyService with RevokeOwn: another user's
// key is no key.
func (s consoleServices) Revoke(ctx context.Context, user, id string) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	if user == "" {
		return console.ErrNotFound
	}
	_, err = st.RevokeKey(ctx, user, id)
	if errors.Is(err, keys.ErrNoSuchKey) {
		return console.ErrNotFound
	}
	return err
}

// Reports implements console.UsageService: the reports of GET /air/usage,
// after the records already settled are written (one flush and one read
// for all of them).
func (s consoleServices) Reports(ctx context.Context, f billing.ReportFilter, by ...billing.GroupBy) ([]*billing.Report, error) {
	st, err := s.flushed(ctx)
	if err != nil {
		return nil, err
	}
	return st.Ledger.Reports(ctx, f, by...)
}

// Records implements console.UsageService: one page of the user's
// records from the cursor on, as GET /air/records reads it (its errors,
// a bad cursor among them, are the request's, as there).
func (s consoleServices) Records(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error) {
	st, err := s.flushed(ctx)
	if err != nil {
		return nil, err
	}
	page, err := st.Ledger.UserRecords(ctx, q)
	if err != nil {
		return nil, console.Invalid(err)
	}
	return page, nil
}

// ExportCSV implements console.UsageService: GET /air/records?format=csv.
func (s consoleServices) ExportCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error {
	st, err := s.flushed(ctx)
	if err != nil {
		return err
	}
	return st.Ledger.ExportCSV(ctx, q, w)
}

// listTasks lists a page of user's tasks for console.TaskService.
func (s consoleServices) listTasks(ctx context.Context, user, after string, limit int) (*tasks.Page, error) {
	rt := s.app.live.Services()
	if rt == nil {
		return nil, errConsoleNotStarted
	}
	page, aerr := rt.Tasks.ListPage(ctx, tasks.Owner{User: user}, after, limit)
	if aerr != nil {
		if aerr.Status == http.StatusBadRequest {
			return nil, console.Invalid(aerr)
		}
		return nil, aerr
	}
	return page, nil
}

// Models implements console.PlaygroundService: the configured chat
// models, globs excluded.
func (s consoleServices) Models() []string {
	var out []string
	for _, r := range s.app.Routes().Models() {
		if r.Kind == providers.KindChat && !r.IsGlob() {
			out = append(out, r.Pattern)
		}
	}
	return out
}

// Chat implements console.PlaygroundService: the request goes through
// air_chat as if air_auth had authenticated user with the key id
// "console", so it is admitted, limited, billed and logged like any other.
func (s consoleServices) Chat(w http.ResponseWriter, r *http.Request, user string, body []byte) (*console.Settled, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodPost
	r2.URL = &url.URL{Path: "/v1/chat/completions"}
	r2.RequestURI = "/v1/chat/completions"
	r2.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	k := &keys.Key{ID: consoleKeyID, User: user, CreatedAt: time.Now().UTC()}
	caddyhttp.SetVar(r2.Context(), varKey, k)
	caddyhttp.SetVar(r2.Context(), varUser, k.User)
	caddyhttp.SetVar(r2.Context(), varKeyID, k.ID)
	start := time.Now().UTC().Add(-time.Second)
	if err := s.chat.ServeHTTP(w, r2, nil); err != nil {
		return nil, err
	}
	// The record is durable before the end of the answer is released, and
	// readable once the ledger is flushed: the user's newest console
	// request since this one began, read from the user's pages of records
	// since then (never the whole ledger's).
	if err := st.Ledger.Flush(r.Context()); err != nil {
		return nil, err
	}
	var found *billing.Record
	q := billing.RecordQuery{User: user, KeyID: consoleKeyID, Since: start, Limit: billing.MaxPage}
	for {
		page, err := st.Ledger.UserRecords(r.Context(), q)
		if err != nil {
			return nil, err
		}
		for i := range page.Records {
			if page.Records[i].Endpoint == "chat" {
				found = &page.Records[i]
			}
		}
		if !page.HasMore {
			break
		}
		q.After = page.Next
	}
	if found == nil {
		return nil, errors.New("the playground request's record was not found")
	}
	return &console.Settled{RequestID: found.ID, Model: found.Model, Usage: found.Usage, Priced: found.Priced, Cost: found.Cost, Currency: found.Currency}, nil
}

// consoleTasks adapts the task listing to console.TaskService, whose
// method name List the key service's takes on consoleServices.
type consoleTasks struct{ consoleServices }

// List implements console.TaskService.
func (t consoleTasks) List(ctx context.Context, user, after string, limit int) (*tasks.Page, error) {
	return t.listTasks(ctx, user, after, limit)
}

// Interface guards.
var (
	_ console.KeyService        = consoleServices{}
	_ console.UsageService      = consoleServices{}
	_ console.PlaygroundService = consoleServices{}
	_ console.OperatorService   = consoleServices{}
	_ console.TaskService       = consoleTasks{}
)
