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

// Statuses of a batch (OpenAI's).
const (
	StatusValidating = "validating"
	StatusInProgress = "in_progress"
	StatusFinalizing = "finalizing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusExpired    = "expired"
	StatusCancelling = "cancelling"
	StatusCancelled  = "cancelled"
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

// Batch is a batch as OpenAI's Batch API shows it.
type Batch struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Endpoint         string          `json:"endpoint"`
	InputFileID      string          `json:"input_file_id"`
	CompletionWindow string          `json:"completion_window"`
	Status           string          `json:"status"`
	OutputFileID     *string         `json:"output_file_id"`
	ErrorFileID      *string         `json:"error_file_id"`
	CreatedAt        int64           `json:"created_at"`
	InProgressAt     *int64          `json:"in_progress_at"`
	ExpiresAt        *int64          `json:"expires_at"`
	FinalizingAt     *int64          `json:"finalizing_at"`
	CompletedAt      *int64          `json:"completed_at"`
	FailedAt         *int64          `json:"failed_at"`
	ExpiredAt        *int64          `json:"expired_at"`
	CancellingAt     *int64          `json:"cancelling_at"`
	CancelledAt      *int64          `json:"cancelled_at"`
	RequestCounts    Counts          `json:"request_counts"`
	Metadata         json.RawMessage `json:"metadata"`
	Errors           *BatchErrors    `json:"errors"`
}

// BatchErrors are the errors of a batch that failed upstream.
type BatchErrors struct {
	Object string       `json:"object"`
	Data   []BatchError `json:"data"`
}

// BatchError is one error of a failed batch.
type BatchError struct {
	Code    string `json:"code"`
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
	// Deployment is "provider/upstream model" of the first line.
	Deployment string `json:"x_deployment"`
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
	Object  string  `json:"object"`
	Data    []Batch `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
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
		if err != nil {
			continue
		}
		out.Data = append(out.Data, d.Batch)
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
	}
	return out, nil
}
