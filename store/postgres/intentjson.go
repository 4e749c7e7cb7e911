package postgres

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/caddy-air/caddy-air/store"
)

// appendIntent appends rec as JSON to b: the fields of store.Record by
// their Go names, as encoding/json writes them, leaving out the zero
// ones (json.Unmarshal, which reads intents back, leaves those zero). It
// is what json.Marshal(rec) means at a tenth of its cost, on the path of
// every request before its upstream call.
func appendIntent(b []byte, rec *store.Record) []byte {
	b = append(b, '{')
	b = appendStringField(b, "ID", rec.ID)
	if !rec.Time.IsZero() {
		b = append(b, `,"Time":"`...)
		b = rec.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = appendStringField(b, "Endpoint", rec.Endpoint)
	b = appendStringField(b, "User", rec.User)
	b = appendStringField(b, "KeyID", rec.KeyID)
	b = appendStringField(b, "Model", rec.Model)
	b = appendStringField(b, "Provider", rec.Provider)
	u := &rec.Usage
	b = append(b, `,"Usage":{"Input":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = appendIntField(b, "CacheCreation", u.CacheCreation)
	b = appendIntField(b, "CacheCreation1h", u.CacheCreation1h)
	b = appendIntField(b, "CacheRead", u.CacheRead)
	b = appendIntField(b, "Output", u.Output)
	b = appendIntField(b, "Reasoning", u.Reasoning)
	b = appendIntField(b, "AudioInput", u.AudioInput)
	b = appendIntField(b, "AudioOutput", u.AudioOutput)
	b = appendIntField(b, "ImageInput", u.ImageInput)
	b = appendIntField(b, "ImageOutput", u.ImageOutput)
	b = appendIntField(b, "WebSearches", u.WebSearches)
	b = appendIntField(b, "WebFetches", u.WebFetches)
	b = appendIntField(b, "FileSearches", u.FileSearches)
	b = appendIntField(b, "CodeSessions", u.CodeSessions)
	b = appendIntField(b, "ImageCalls", u.ImageCalls)
	b = appendIntField(b, "Characters", u.Characters)
	b = appendIntField(b, "AudioMillis", u.AudioMillis)
	b = appendIntField(b, "SearchUnits", u.SearchUnits)
	b = append(b, '}')
	b = appendStringField(b, "Source", rec.Source)
	b = appendIntField(b, "Status", int64(rec.Status))
	b = appendStringField(b, "Outcome", rec.Outcome)
	b = appendIntField(b, "Images", int64(rec.Images))
	b = appendIntField(b, "VideoMillis", rec.VideoMillis)
	b = appendIntField(b, "Tier", int64(rec.Tier))
	if rec.Priced {
		b = append(b, `,"Priced":true`...)
	}
	b = appendStringField(b, "Currency", rec.Currency)
	b = appendIntField(b, "Cost", rec.Cost)
	b = appendStringField(b, "ServiceTier", rec.ServiceTier)
	b = appendStringField(b, "Deployment", rec.Deployment)
	b = appendStringField(b, "ServedModel", rec.ServedModel)
	b = appendStringField(b, "Unpriced", rec.Unpriced)
	b = appendIntField(b, "DurationMillis", rec.DurationMillis)
	b = appendStringField(b, "Team", rec.Team)
	b = appendStringField(b, "Tags", rec.Tags)
	return append(b, '}')
}

// appendIntField appends `,"name":v` unless v is zero.
func appendIntField(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// appendStringField appends `"name":"v"`, after a comma unless it is the
// first field (ID, always written), and nothing for an empty v other
// than ID.
func appendStringField(b []byte, name, v string) []byte {
	if name != "ID" {
		if v == "" {
			return b
		}
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

// appendJSONString appends s as a JSON string. Plain printable ASCII is
// copied as it is; anything else (quotes, backslashes, control
// characters, non-ASCII, invalid UTF-8) goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
