package batches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Statuses of a batch (OpenAI's). A batch is validating, in progress,
// finalizing or cancelling while the provider runs it; it ends completed,
// failed, expired or cancelled, once its lines are billed.
const (
	// StatusValidating is a batch the provider checks.
	StatusValidating = "validating"
	// StatusInProgress is a batch the provider runs.
	StatusInProgress = "in_progress"
	// StatusFinalizing is a batch whose output the provider writes.
	StatusFinalizing = "finalizing"
	// StatusCompleted is a batch that ran all its requests.
	StatusCompleted = "completed"
	// StatusFailed is a batch the provider refused or could not run.
	StatusFailed = "failed"
	// StatusExpired is a batch not done within its window (or given up).
	StatusExpired = "expired"
	// StatusCancelling is a batch asked to cancel, still running.
	StatusCancelling = "cancelling"
	// StatusCancelled is a batch that stopped on a cancel.
	StatusCancelled = "cancelled"
)

// terminal reports whether status is final upstream.
func terminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Counts are a batch's request counts.
type Counts struct {
	// Total is the number of requests.
	Total int `json:"total"`
	// Completed is the number that succeeded.
	Completed int `json:"completed"`
	// Failed is the number that failed.
	Failed int `json:"failed"`
}

// Batch is a batch as OpenAI's Batch API shows it. The times are Unix
// seconds, null until the batch reaches them.
type Batch struct {
	// ID is the gateway's id of the batch, "batch_" and 24 hex digits.
	ID string `json:"id"`
	// Object is always "batch".
	Object string `json:"object"`
	// Endpoint is EndpointChat or EndpointEmbeddings.
	Endpoint string `json:"endpoint"`
	// InputFileID is the file of the batch's requests.
	InputFileID string `json:"input_file_id"`
	// CompletionWindow is always "24h".
	CompletionWindow string `json:"completion_window"`
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// OutputFileID is the re-hosted output, once the batch ended.
	OutputFileID *string `json:"output_file_id"`
	// ErrorFileID is the re-hosted error file, once the batch ended with
	// failed requests.
	ErrorFileID *string `json:"error_file_id"`
	// CreatedAt is when the batch was created.
	CreatedAt int64 `json:"created_at"`
	// InProgressAt is when a poll first saw it in progress.
	InProgressAt *int64 `json:"in_progress_at"`
	// ExpiresAt is the end of its completion window.
	ExpiresAt *int64 `json:"expires_at"`
	// FinalizingAt is when a poll first saw it finalizing.
	FinalizingAt *int64 `json:"finalizing_at"`
	// CompletedAt is when it completed and was billed.
	CompletedAt *int64 `json:"completed_at"`
	// FailedAt is when it failed and was billed.
	FailedAt *int64 `json:"failed_at"`
	// ExpiredAt is when it expired and was billed.
	ExpiredAt *int64 `json:"expired_at"`
	// CancellingAt is when it was asked to cancel.
	CancellingAt *int64 `json:"cancelling_at"`
	// CancelledAt is when it was cancelled and billed.
	CancelledAt *int64 `json:"cancelled_at"`
	// RequestCounts are its requests, as the provider last counted them.
	RequestCounts Counts `json:"request_counts"`
	// Metadata is the client's metadata object, or null.
	Metadata json.RawMessage `json:"metadata"`
	// Errors are the provider's errors of a batch that failed, or null.
	Errors *BatchErrors `json:"errors"`
}

// BatchErrors are the errors of a batch that failed upstream.
type BatchErrors struct {
	// Object is "list".
	Object string `json:"object"`
	// Data are the errors.
	Data []BatchError `json:"data"`
}

// BatchError is one error of a failed batch.
type BatchError struct {
	// Code is the provider's error code.
	Code string `json:"code"`
	// Message is the provider's explanation.
	Message string `json:"message"`
}

// doc is a stored batch: its view and what the gateway needs to poll and
// bill it.
type doc struct {
	Batch
	// KeyID is the key that created it.
	KeyID string `json:"x_key_id"`
	// Provider serves it; UpstreamID is its id there.
	Provider   string `json:"x_provider"`
	UpstreamID string `json:"x_upstream_id"`
	// Models maps the upstream model of each line to the client's.
	Models map[string]string `json:"x_models"`
	// Deployment is the deployment that took it, "provider/model".
	Deployment string `json:"x_deployment"`
	// ServedModel is the fallback model that took it, "" when its own
	// model did; its lines are billed at its price.
	ServedModel string `json:"x_served_model,omitempty"`
	// BaseURL and Key are the base URL and the index of the provider's
	// key that took it: it is polled, cancelled and downloaded there
	// (an upstream batch belongs to its key's account). A batch stored
	// without them uses the provider's first.
	BaseURL string `json:"x_base_url,omitempty"`
	Key     int    `json:"x_key,omitempty"`
	// Upstream is the upstream status the gateway last saw.
	Upstream string `json:"x_upstream_status,omitempty"`
	// UpstreamOutput and UpstreamErrors are the upstream's output and
	// error file ids, once it ended.
	UpstreamOutput string `json:"x_upstream_output,omitempty"`
	UpstreamErrors string `json:"x_upstream_errors,omitempty"`
	// Billed is set once every completed line is on the ledger.
	Billed bool `json:"x_billed,omitempty"`
	// Failures counts the failed polls in a row.
	Failures int `json:"x_failures,omitempty"`
}

// working reports whether the poller still has work on d.
func (d *doc) working() bool { return !d.Billed }

// batchNotFound is the answer for a batch that does not exist, expired or
// is someone else's.
func batchNotFound(id string) *apierror.Error {
	return apierror.NotFound("batch_not_found", "no batch '"+id+"' was found").WithParam("batch_id")
}

// record is the stored form of d.
func (s *Service) record(d *doc, user string) (store.TaskRecord, error) {
	data, err := json.Marshal(d)
	created := unix(d.CreatedAt)
	return store.TaskRecord{ID: d.ID, User: user, Created: created, Expires: created.Add(s.fileTTL),
		Working: d.working(), Data: data}, err
}

// marshal is the stored form of d.
func marshal(d *doc) ([]byte, error) { return json.Marshal(d) }

// decodeDoc reads a stored batch.
func decodeDoc(rec *store.TaskRecord) (*doc, error) {
	d := new(doc)
	if err := json.Unmarshal(rec.Data, d); err != nil {
		return nil, fmt.Errorf("decoding batch %s: %w", rec.ID, err)
	}
	return d, nil
}

// reads reports whether o may read d: d is o's user's, and a key scoped
// to some models reads only the batches all of whose models it may use.
func (o Owner) reads(user string, d *doc) bool {
	if user != o.User {
		return false
	}
	for _, model := range d.Models {
		if !o.allows(model) {
			return false
		}
	}
	return true
}

// load reads batch id of o's.
func (s *Service) load(ctx context.Context, o Owner, id string) (*doc, *apierror.Error) {
	rec, err := s.batches.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.User != o.User {
		return nil, batchNotFound(id)
	}
	var d *doc
	if err == nil {
		d, err = decodeDoc(&rec)
	}
	if err != nil {
		s.log.Error("reading a batch", zap.String("batch", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	if !o.reads(rec.User, d) {
		return nil, batchNotFound(id)
	}
	return d, nil
}

// GetBatch returns batch id of o's.
func (s *Service) GetBatch(ctx context.Context, o Owner, id string) (*Batch, *apierror.Error) {
	d, aerr := s.load(ctx, o, id)
	if aerr != nil {
		return nil, aerr
	}
	return &d.Batch, nil
}

// BatchList is the answer of GET /v1/batches.
type BatchList struct {
	// Object is always "list".
	Object string `json:"object"`
	// Data are the batches, newest first.
	Data []Batch `json:"data"`
	// FirstID and LastID are the first and last batch of Data; null when
	// it is empty.
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	// HasMore says whether older batches follow.
	HasMore bool `json:"has_more"`
}

// ListBatches returns up to limit of o's batches, newest first, after
// batch after ("" starts with the newest).
func (s *Service) ListBatches(ctx context.Context, o Owner, after string, limit int) (*BatchList, *apierror.Error) {
	var cursor store.TaskCursor
	if after != "" {
		rec, err := s.batches.Get(ctx, after)
		if err != nil || rec.User != o.User {
			return nil, apierror.InvalidRequest("after", fmt.Sprintf("after: no batch '%s' to list after", after))
		}
		cursor = store.TaskCursor{Created: rec.Created, ID: rec.ID}
	}
	recs, err := s.batches.ListByUser(ctx, o.User, cursor, limit+1)
	if err != nil {
		s.log.Error("listing batches", zap.String("user", o.User), zap.Error(err))
		return nil, apierror.Internal()
	}
	out := &BatchList{Object: "list", Data: make([]Batch, 0, min(limit, len(recs)))}
	for i := range recs {
		if len(out.Data) == limit {
			out.HasMore = true
			break
		}
		d, err := decodeDoc(&recs[i])
		if err != nil || !o.reads(recs[i].User, d) {
			continue
		}
		out.Data = append(out.Data, d.Batch)
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
	}
	return out, nil
}
