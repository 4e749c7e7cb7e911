package routing

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// AttemptLogMessage is the message of an attempt's log line.
const AttemptLogMessage = "upstream attempt"

// AttemptLog is what the endpoint knows of an attempt's end, for its log
// line.
type AttemptLog struct {
	// RequestID is the request's id (its ledger record's), or the task's.
	RequestID string
	// Operation names the endpoint: chat, messages, responses,
	// embeddings, count_tokens, image or video.
	Operation string
	// Model is the model the client asked for.
	Model string
	// Status is the upstream's answer status, 0 when none came.
	Status int
	// Result is the attempt's result, one of the Attempt* constants.
	Result string
	// Err is why the attempt failed, nil when it did not.
	Err error
	// Delivered is set when the attempt's answer went to the client: the
	// request made no further attempt.
	Delivered bool
}

// LogAttempt writes the attempt's one log line to l: at debug level for
// the first attempt of a request when its answer went to the client (the
// access log line says all of it), at info level for every other attempt
// (one that failed, and every attempt after it). The line names the
// deployment, the upstream's base URL without user info or query, the
// key's index (never the key), the attempt's number, whether it went to a
// fallback model (and which), its status, result and duration.
func (t *Target) LogAttempt(l *zap.Logger, a AttemptLog) {
	if l == nil {
		return
	}
	level := zapcore.InfoLevel
	if t.Number == 1 && a.Delivered {
		level = zapcore.DebugLevel
	}
	ce := l.Check(level, AttemptLogMessage)
	if ce == nil {
		return
	}
	fields := make([]zap.Field, 0, 14)
	fields = append(fields, zap.String("request_id", a.RequestID), zap.String("operation", a.Operation),
		zap.String("model", a.Model), zap.String("provider", t.Provider.Name), zap.String("deployment", t.Deployment()),
		zap.String("upstream", publicURL(t.Attempt.BaseURL)))
	if t.Upstream != nil {
		fields = append(fields, zap.Int("key", t.Upstream.Key))
	}
	fields = append(fields, zap.Int("attempt", t.Number), zap.Bool("fallback", t.Fallback))
	if t.Fallback && t.Route != nil {
		fields = append(fields, zap.String("served_model", t.Route.Pattern))
	}
	fields = append(fields,
		zap.Int("status", a.Status), zap.String("result", a.Result), zap.Bool("delivered", a.Delivered),
		zap.Float64("duration", t.r.now().Sub(t.start).Seconds()))
	if a.Err != nil {
		fields = append(fields, zap.Error(a.Err))
	}
	ce.Write(fields...)
}
