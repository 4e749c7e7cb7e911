package store

import (
	"context"
	"time"
)

// RequestLog is the stored request and response bodies of one request,
// kept when request logging is on for its key or team. The bodies are
// already capped and redacted.
type RequestLog struct {
	// RequestID names the request and its ledger record.
	RequestID string `json:"request_id"`
	// KeyID, User and Team own the request; the owner and operators may
	// read it.
	KeyID string `json:"key_id"`
	User  string `json:"user"`
	Team  string `json:"team,omitempty"`
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Request and Response are the bodies (a stream reassembled), as
	// text: stored and shown as they were sent, not encoded.
	Request  string `json:"request,omitempty"`
	Response string `json:"response,omitempty"`
	// RequestTruncated and ResponseTruncated report that a body was cut
	// at the size cap.
	RequestTruncated  bool `json:"request_truncated,omitempty"`
	ResponseTruncated bool `json:"response_truncated,omitempty"`
	// RequestNotKept reports that the request body was lost: a background
	// response's final answer logged when its create's log was not stored.
	RequestNotKept bool `json:"request_not_kept,omitempty"`
}

// RequestLogs keeps request logs until their TTL passes.
type RequestLogs interface {
	// Put stores l for ttl; a second Put of an id replaces the first.
	Put(ctx context.Context, l RequestLog, ttl time.Duration) error
	// Get returns the log of a request, ErrNotFound once expired or if
	// none was kept.
	Get(ctx context.Context, requestID string) (RequestLog, error)
}
