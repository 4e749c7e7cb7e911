package billing

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RecordQuery selects a page of one user's ledger records.
type RecordQuery struct {
	// User owns the records. Required.
	User string `json:"user"`
	// KeyID, Model and Outcome keep only records that match exactly.
	KeyID   string `json:"key_id,omitempty"`
	Model   string `json:"model,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// Since and Until bound the records' time: Since <= Time < Until (a
	// zero bound is open).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// After is the Next of the previous page; "" starts at the oldest
	// (the newest with Desc).
	After string `json:"after,omitempty"`
	// Limit is the page size, 1 to MaxPage; 0 means DefaultPage.
	Limit int `json:"limit,omitempty"`
	// Desc pages newest first: each page's records in the reverse of
	// their write order, its Next toward older ones.
	Desc bool `json:"desc,omitempty"`
}

// Page sizes of RecordQuery.
const (
	DefaultPage = 50
	MaxPage     = 1000
)

// RecordPage is a page of ledger records.
type RecordPage struct {
	// Records are in the order they were written (its reverse with
	// RecordQuery.Desc).
	Records []Record `json:"records"`
	// HasMore says whether more records follow.
	HasMore bool `json:"has_more"`
	// Next is the cursor of the next page (the After of its query), when
	// HasMore.
	Next string `json:"next,omitempty"`
}

// UserRecords returns a page of q.User's records, oldest first (newest
// first with q.Desc). A page reads from its cursor on, not the records
// before it in its order. Records
// enqueued but not yet written are not included; Flush first to include
// them.
func (l *Ledger) UserRecords(ctx context.Context, q RecordQuery) (*RecordPage, error) {
	if q.User == "" {
		return nil, errors.New("records: a user is required")
	}
	if q.Limit == 0 {
		q.Limit = DefaultPage
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		return nil, errors.New("records: limit must be from 1 to " + strconv.Itoa(MaxPage))
	}
	recs, next, err := l.repo.UserRecords(ctx, store.RecordQuery{User: q.User, KeyID: q.KeyID, Model: q.Model, Outcome: q.Outcome,
		Since: q.Since, Until: q.Until, After: q.After, Limit: q.Limit, Desc: q.Desc})
	if err != nil {
		return nil, err
	}
	p := &RecordPage{Records: make([]Record, len(recs)), HasMore: next != "", Next: next}
	for i := range recs {
		p.Records[i] = recordFromStore(&recs[i])
	}
	return p, nil
}

// csvHeader names the columns of ExportCSV.
var csvHeader = []string{"id", "time", "endpoint", "user", "key_id", "model", "provider", "input_tokens", "cache_creation_tokens",
	"cache_creation_1h_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens", "source", "status", "outcome",
	"images", "video_ms", "cost", "currency", "audio_input_tokens", "audio_output_tokens", "image_input_tokens",
	"image_output_tokens", "web_searches", "web_fetches", "file_searches", "code_sessions", "image_generation_calls", "unpriced",
	"duration_ms", "team", "tags"}

// ExportCSV writes every record of q.User that q's filters select (from
// q.After on) to w as CSV with a header line, page by page; without a
// q.User, every user's, as SearchRecords pages them. The cost and
// currency of a record of an unpriced model are both "unpriced", never a
// zero cost; the last column lists, separated by ";", the charges of a
// priced record that had no price (Record.Unpriced), and the one after
// it how long the request took in milliseconds, empty when not measured;
// the last two are the request's team and its tags, separated by ";".
func (l *Ledger) ExportCSV(ctx context.Context, q RecordQuery, w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	q.Limit = MaxPage
	next := l.UserRecords
	if q.User == "" {
		next = l.SearchRecords
	}
	for {
		p, err := next(ctx, q)
		if err != nil {
			return err
		}
		for i := range p.Records {
			if err := cw.Write(csvRow(&p.Records[i])); err != nil {
				return err
			}
		}
		if !p.HasMore {
			break
		}
		q.After = p.Next
	}
	cw.Flush()
	return cw.Error()
}

// csvRow is r's line of ExportCSV.
func csvRow(r *Record) []string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	cost, currency := r.Cost.String(), r.Currency
	if !r.Priced {
		cost, currency = "unpriced", "unpriced"
	}
	duration := ""
	if r.DurationMillis > 0 {
		duration = i(r.DurationMillis)
	}
	u := r.Usage
	t := csvText
	return []string{t(r.ID), r.Time.UTC().Format(time.RFC3339Nano), t(r.Endpoint), t(r.User), t(r.KeyID), t(r.Model), t(r.Provider),
		i(u.Input), i(u.CacheCreation), i(u.CacheCreation1h), i(u.CacheRead), i(u.Output), i(u.Reasoning),
		string(r.Source), strconv.Itoa(r.Status), t(r.Outcome), strconv.Itoa(r.Images), i(r.VideoMillis), cost, currency,
		i(u.AudioInput), i(u.AudioOutput), i(u.ImageInput), i(u.ImageOutput), i(u.WebSearches), i(u.WebFetches),
		i(u.FileSearches), i(u.CodeSessions), i(u.ImageCalls), strings.Join(r.Unpriced, ";"), duration,
		t(r.Team), t(strings.Join(r.Tags, ";"))}
}

// csvText keeps a text cell from being read as a formula by a spreadsheet
// (OWASP's CSV injection advice): one beginning with =, +, -, @, a tab or a
// carriage return gets a leading apostrophe. Model names and user ids can
// come from clients and identity providers.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
