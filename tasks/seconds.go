package tasks

import (
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// maxVideoSeconds bounds a video duration, asked for or reported: one
// hour, far above what any video model generates (seconds to a minute).
// A create asking for more gets 400; a provider reporting more is not
// believed (see videoSeconds).
const maxVideoSeconds = 3600

// maxReportedFactor bounds a reported duration by what the client asked
// for: a provider may round a duration up, or deliver the next length it
// supports, but not more than twice what was asked.
const maxReportedFactor = 2

// reportedSeconds reads a duration a provider reported, a JSON number or
// a string holding one, rounded up to whole seconds. It returns 0, true
// when none was reported (absent or null), and 0, false when what was
// reported is not a duration in (0, maxVideoSeconds]: negative, zero, NaN,
// infinite, too large or not a number at all. The value is compared as a
// float, so no report can overflow the conversion to an integer.
func reportedSeconds(v gjson.Result) (int64, bool) {
	var f float64
	switch v.Type {
	case gjson.Null:
		return 0, true
	case gjson.Number:
		f = v.Num
	case gjson.String:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(v.Str), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	// NaN fails every comparison, so it is caught here too.
	if !(f > 0 && f <= maxVideoSeconds) {
		return 0, false
	}
	return int64(math.Ceil(f)), true
}

// readSeconds sets out's reported duration from the first of vs that was
// reported; an implausible one is recorded, for the log, and stops the
// search, so that the billed duration falls back to the request.
func (out *outcome) readSeconds(vs ...gjson.Result) {
	for _, v := range vs {
		if !v.Exists() || v.Type == gjson.Null {
			continue
		}
		n, ok := reportedSeconds(v)
		if !ok {
			out.badSeconds = clip(v.Raw, 64)
			return
		}
		out.seconds = n
		return
	}
}

// clip returns s cut to at most n bytes, marked with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// videoSeconds is the billed duration of task t's video: what the
// provider reported when that is plausible (see reportedSeconds, and at
// most maxReportedFactor times what the client asked for), else what the
// client asked for, else the provider's default. It is never more than
// maxVideoSeconds.
func videoSeconds(t *Task, out *outcome) int64 {
	if s := out.seconds; s > 0 && s <= maxVideoSeconds && (t.Seconds <= 0 || s <= maxReportedFactor*t.Seconds) {
		return s
	}
	if t.Seconds > 0 {
		return min(t.Seconds, maxVideoSeconds)
	}
	return defaultVideoSeconds(t.Protocol)
}

// implausibleSeconds returns what the provider reported as t's duration
// when videoSeconds does not believe it, for a warning; "" otherwise.
func implausibleSeconds(t *Task, out *outcome) string {
	switch {
	case out.badSeconds != "":
		return out.badSeconds
	case out.seconds > 0 && videoSeconds(t, out) != out.seconds:
		return strconv.FormatInt(out.seconds, 10)
	}
	return ""
}
