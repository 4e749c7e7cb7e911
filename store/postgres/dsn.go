package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// keywordPassword matches password=… in a keyword/value connection string,
// quoted or not.
var keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactDSN returns dsn with its password replaced by "xxxxx", in URL form
// (postgres://user:secret@host/db, or ?password=secret) and in keyword form
// (host=h password=secret). It is what may appear in logs and errors.
func RedactDSN(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// An unparsable URL may still hold a password: keep only the
			// scheme.
			return dsn[:strings.Index(dsn, "://")+3] + "…"
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return keywordPassword.ReplaceAllString(dsn, "${1}xxxxx")
}
