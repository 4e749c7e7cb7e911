package billing

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// DefaultSearchDays is how far back a search across users reaches when it
// has no Since: the days before its Until (or today).
const DefaultSearchDays = 31

// SearchUsersPerPage bounds the users a page of SearchRecords looks at in
// the day aggregates, so that a page costs about the same whatever the
// number of users: a search that few users match may return pages with
// fewer records than their limit, even none, that still have more.
const SearchUsersPerPage = 100

// searchAggregatesPerPage bounds the day aggregates a page of
// SearchRecords reads to tell whether users match (an outcome filter
// reads every aggregate of a user without that outcome): once a page has
// read this many, it looks at no further user. A page always looks at
// one user at least, so a search always goes on.
const searchAggregatesPerPage = 2500

// SearchRecords returns a page of the records q selects, like
// UserRecords, but q.User is optional: without it the page holds every
// user's records, user by user (users in name order, each user's records
// oldest first, or newest first with q.Desc), and its Since defaults to DefaultSearchDays before its
// Until. It never scans the ledger: the users come from the months'
// totals (store.Ledger.MonthTotals), a user is read only if the day
// aggregates of the range have requests that match the key, model and
// outcome, and each user's records are read as UserRecords reads them.
// A page looks at no more than SearchUsersPerPage users, and at fewer when
// their aggregates are many (searchAggregatesPerPage). The cursor is
// opaque and differs from UserRecords'.
func (l *Ledger) SearchRecords(ctx context.Context, q RecordQuery) (*RecordPage, error) {
	if q.Limit == 0 {
		q.Limit = DefaultPage
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		return nil, errors.New("records: limit must be from 1 to " + strconv.Itoa(MaxPage))
	}
	fromUser, inner, err := parseSearchCursor(q.After)
	if err != nil {
		return nil, err
	}
	var users []string
	if q.User != "" {
		if fromUser != "" && fromUser != q.User {
			return nil, errors.New("records: the cursor is another search's")
		}
		users = []string{q.User}
	} else {
		if q.Since.IsZero() {
			until := q.Until
			if until.IsZero() {
				until = time.Now()
			}
			q.Since = until.UTC().Truncate(24*time.Hour).AddDate(0, 0, -DefaultSearchDays)
		}
		if users, err = l.usersBetween(ctx, q.Since, q.Until); err != nil {
			return nil, err
		}
	}
	page := &RecordPage{Records: []Record{}}
	looked, read := 0, 0
	for _, u := range users {
		if u < fromUser {
			continue
		}
		after := ""
		if u == fromUser {
			after = inner
		}
		if after == "" {
			if looked == SearchUsersPerPage || read >= searchAggregatesPerPage {
				page.HasMore, page.Next = true, searchCursor(u, "")
				return page, nil
			}
			looked++
			ok, n, err := l.hasMatches(ctx, u, q)
			read += n
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		need := q.Limit - len(page.Records)
		if need == 0 {
			page.HasMore, page.Next = true, searchCursor(u, "")
			return page, nil
		}
		uq := q
		uq.User, uq.After, uq.Limit = u, after, need
		up, err := l.UserRecords(ctx, uq)
		if err != nil {
			return nil, err
		}
		page.Records = append(page.Records, up.Records...)
		if up.HasMore {
			page.HasMore, page.Next = true, searchCursor(u, up.Next)
			return page, nil
		}
	}
	return page, nil
}

// maxMonthScans bounds the months usersBetween reads one by one (a read
// of the month's totals each). A longer range is read in one scan of the
// day aggregates, whose cost grows with what is stored in the range, not
// with the range: since=0001-01-01 would otherwise read 24,000 months.
const maxMonthScans = 36

// usersBetween lists, in name order, the users with totals in the months
// from since to until (zero: now). No record lies after now: a later
// until is read as now, a day ahead for the clocks of other instances.
func (l *Ledger) usersBetween(ctx context.Context, since, until time.Time) ([]string, error) {
	if latest := time.Now().Add(24 * time.Hour); until.IsZero() || until.After(latest) {
		until = latest
	}
	since, until = since.UTC(), until.UTC()
	seen := map[string]bool{}
	var users []string
	add := func(user string) {
		if !seen[user] {
			seen[user] = true
			users = append(users, user)
		}
	}
	first := time.Date(since.Year(), since.Month(), 1, 0, 0, 0, 0, time.UTC)
	if months := (until.Year()-first.Year())*12 + int(until.Month()-first.Month()) + 1; months > maxMonthScans {
		f := store.UsageFilter{Since: since.Format(dayLayout), Until: until.Format(dayLayout)}
		err := l.repo.Usage(ctx, f, func(a store.Aggregate) error {
			add(a.User)
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(users)
		return users, nil
	}
	last := store.MonthOf(until)
	for m := first; store.MonthOf(m) <= last; m = m.AddDate(0, 1, 0) {
		err := l.repo.MonthTotals(ctx, store.MonthOf(m), func(ut store.UserTotals) error {
			add(ut.User)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(users)
	return users, nil
}

// hasMatches reports whether user's day aggregates in q's range count
// requests of q's key and model with q's outcome, and how many aggregates
// it read. Aggregates are per day, so it may report a user whose matching
// records all fall outside q's hours; never the other way round.
func (l *Ledger) hasMatches(ctx context.Context, user string, q RecordQuery) (bool, int, error) {
	f := store.UsageFilter{User: user, KeyID: q.KeyID, Model: q.Model}
	if !q.Since.IsZero() {
		f.Since = q.Since.UTC().Format(dayLayout)
	}
	if !q.Until.IsZero() {
		f.Until = q.Until.UTC().Format(dayLayout)
	}
	found, n := false, 0
	err := l.repo.Usage(ctx, f, func(a store.Aggregate) error {
		n++
		if a.Requests > 0 && (q.Outcome == "" || a.Outcomes[q.Outcome] > 0) {
			found = true
			return store.ErrStop
		}
		return nil
	})
	if errors.Is(err, store.ErrStop) {
		err = nil
	}
	return found, n, err
}

// searchCursor is the cursor of a search page that goes on at user, from
// the cursor inner of the user's records ("": the first).
func searchCursor(user, inner string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(user + "\x00" + inner))
}

// parseSearchCursor reverses searchCursor; "" is the first page.
func parseSearchCursor(c string) (user, inner string, err error) {
	if c == "" {
		return "", "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", errors.New("records: bad cursor")
	}
	user, inner, ok := strings.Cut(string(b), "\x00")
	if !ok || user == "" {
		return "", "", errors.New("records: bad cursor")
	}
	return user, inner, nil
}
