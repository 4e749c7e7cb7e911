package console

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when":  when,
	"whenp": func(t *time.Time) string { return whenPtr(t, "—") },
	"money": money,
	"join":  strings.Join,
	"ms": func(ms int64) string {
		return (time.Duration(ms) * time.Millisecond).String()
	},
	"latency": latency,
	"limit": func(a billing.Amount) string {
		if a == 0 {
			return ""
		}
		return a.Short()
	},
	"amount": func(a billing.Amount) string { return a.Short() },
	"outcomes": func() []string {
		return []string{billing.OutcomeOK, billing.OutcomePartial, billing.OutcomeUpstreamError, billing.OutcomeFailed,
			billing.OutcomeTimeout, billing.OutcomeUnavailable, billing.OutcomeCanceled, billing.OutcomeInterrupted}
	},
	"taskUnit": func(task string) string {
		return map[string]string{"image": "image", "video_second": "second of video", "video_task": "task"}[task]
	},
	"keyStates": func() []string { return []string{"active", "expired", "revoked"} },
	"sumTable": func(id, name, by string, rep *billing.Report) map[string]any {
		return map[string]any{"ID": id, "Name": name, "By": by, "Report": rep}
	},
	"intOr": func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	},
}

// when formats a time in UTC to the minute.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// whenPtr formats t, or none when nil.
func whenPtr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return when(*t)
}

// money formats an exact amount with its currency, to the cent or to its
// last non-zero decimal (billing.Amount.Short); an unpriced amount says
// so.
func money(a billing.Amount, currency string) string {
	if currency == "" {
		return "unpriced"
	}
	return a.Short() + " " + currency
}

// latency shows a record's duration: milliseconds below a second, then
// seconds to the hundredth; "—" when it was not measured (0).
func latency(ms int64) string {
	switch {
	case ms <= 0:
		return "—"
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 2, 64) + " s"
}
