// Package tasks serves /v1/tasks: image generation, answered synchronously,
// and video generation, answered at once and finished by a background
// poller. Tasks live in the store, so they survive restarts; every state
// change is a compare-and-set, so a task ends, and is billed, exactly once.
package tasks

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// Task statuses (contract section 3). Succeeded and failed are terminal.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Billing states of a task.
const (
	// BillingPending marks a succeeded task whose charge is not yet recorded.
	BillingPending = "pending"
	// BillingDone marks a task whose charge Biller.ChargeTask accepted.
	BillingDone = "billed"
)

// timeLayout is ISO 8601 in UTC with millisecond precision.
const timeLayout = "2006-01-02T15:04:05.000Z"

// Owner is the caller of the task API: the user who owns the API key, and
// the key itself (recorded for billing).
type Owner struct {
	// User owns the task; only this user can query or list it.
	User string
	// KeyID is the public id of the API key that created the task.
	KeyID string
	// Scope, when set, reports the models whose tasks the owner may read
	// (the model scope of the key that asks); a task of another model is
	// left out of lists and answered as unknown. Nil reads all.
	Scope func(model string) bool
}

// reads reports whether owner may read t: its user's, in its scope.
func (o Owner) reads(t *Task) bool {
	return t.User == o.User && (o.Scope == nil || o.Scope(t.Model))
}

// Output is the result of a succeeded task.
type Output struct {
	// ImageURL is the first generated image (image tasks).
	ImageURL string `json:"image_url,omitempty"`
	// ImageURLs lists every generated image, in order, when n > 1 was
	// asked for (image tasks).
	ImageURLs []string `json:"image_urls,omitempty"`
	// VideoURL is the generated video (video tasks).
	VideoURL string `json:"video_url,omitempty"`
}

// Task is the stored record of one generation task.
type Task struct {
	// ID is the public task id, "task_" followed by 26 random characters.
	ID string `json:"id"`
	// User owns the task.
	User string `json:"user"`
	// KeyID is the API key that created the task.
	KeyID string `json:"key_id"`
	// Model is the model id the client asked for.
	Model string `json:"model"`
	// Type is "image" or "video".
	Type string `json:"type"`
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// Progress is a percentage, 100 only once succeeded.
	Progress int `json:"progress"`
	// Output is set once the task succeeded.
	Output *Output `json:"output,omitempty"`
	// Error is "<ErrorName>: <message>", set once the task failed.
	Error string `json:"error,omitempty"`
	// CreatedAt is when the task was created.
	CreatedAt time.Time `json:"created_at"`
	// CompletedAt is when the task reached a terminal state.
	CompletedAt *time.Time `json:"completed_at,omitempty"`

	// Provider names the upstream provider serving the task.
	Provider string `json:"provider"`
	// Protocol is the provider's protocol when the task was created.
	Protocol string `json:"protocol"`
	// UpstreamModel is the model id sent upstream.
	UpstreamModel string `json:"upstream_model"`
	// Deployment is the deployment that accepted the task, "provider" or
	// "provider/upstream model"; the ledger prices the task by it.
	Deployment string `json:"deployment,omitempty"`
	// ServedModel is the fallback model that served the task, when it was
	// not Model.
	ServedModel string `json:"served_model,omitempty"`
	// UpstreamID is the provider's id of an asynchronous job.
	UpstreamID string `json:"upstream_id,omitempty"`
	// BaseURL is the provider base URL the job was submitted to; polls go
	// to the same place.
	BaseURL string `json:"base_url,omitempty"`
	// KeyHash identifies, without revealing it, the provider API key the job
	// was submitted with; polls use the same key.
	KeyHash string `json:"key_hash,omitempty"`
	// MediaBase is the public URL prefix of re-hosted media.
	MediaBase string `json:"media_base"`
	// TypicalDuration is the model's usual generation time, for derived
	// progress.
	TypicalDuration time.Duration `json:"typical_duration,omitempty"`
	// Seconds is the video duration the client asked for, if it said.
	Seconds int64 `json:"seconds,omitempty"`
	// Images is how many images were delivered.
	Images int `json:"images,omitempty"`
	// VideoSeconds is the billed duration of the delivered video.
	VideoSeconds int64 `json:"video_seconds,omitempty"`
	// Usage is the token usage the provider reported for the images
	// (gpt-image-1's tokens), which the ledger prices when the model has
	// image token prices; nil when it reported none.
	Usage *billing.Usage `json:"usage,omitempty"`
	// Media lists the ids of media re-hosted for this task.
	Media []string `json:"media,omitempty"`
	// Billing is "", BillingPending or BillingDone.
	Billing string `json:"billing,omitempty"`
	// NextPollAt is when the poller may next work on the task; setting it
	// in the future is also how a poller claims the task.
	NextPollAt time.Time `json:"next_poll_at"`
	// Failures counts consecutive failed upstream polls, for backoff.
	Failures int `json:"failures,omitempty"`
	// Reply is the provider's answer to a create of
	// /v1/images/generations that succeeded (see CreateImagesHeld); it is
	// not stored.
	Reply *ImagesReply `json:"-"`
}

// Terminal reports whether the task has succeeded or failed.
func (t *Task) Terminal() bool {
	return t.Status == StatusSucceeded || t.Status == StatusFailed
}

// needsWork reports whether the poller still has something to do: poll a
// running task or bill a succeeded one.
func (t *Task) needsWork() bool {
	return !t.Terminal() || (t.Status == StatusSucceeded && t.Billing == BillingPending)
}

// CreateView is the answer to POST /v1/tasks: the fields of contract 2.4's
// create response, plus the result of an image task, which is returned
// directly.
type CreateView struct {
	// ID is the task id.
	ID string `json:"id"`
	// Object is always "task".
	Object string `json:"object"`
	// Status is the task status.
	Status string `json:"status"`
	// Model is the model id.
	Model string `json:"model"`
	// Type is "image" or "video".
	Type string `json:"type"`
	// CreatedAt is the creation time, ISO 8601 with milliseconds.
	CreatedAt string `json:"created_at"`
	// Output is the result of a succeeded task.
	Output *Output `json:"output,omitempty"`
	// Error is the reason of a failed task.
	Error string `json:"error,omitempty"`
}

// QueryView is the answer to GET /v1/tasks/{id}.
type QueryView struct {
	// ID is the task id.
	ID string `json:"id"`
	// Object is always "task".
	Object string `json:"object"`
	// Status is the task status.
	Status string `json:"status"`
	// Model is the model id.
	Model string `json:"model"`
	// Type is "image" or "video".
	Type string `json:"type"`
	// Progress is a percentage.
	Progress int `json:"progress"`
	// Output is the result of a succeeded task.
	Output *Output `json:"output,omitempty"`
	// Error is the reason of a failed task.
	Error string `json:"error,omitempty"`
	// CreatedAt is the creation time, ISO 8601 with milliseconds.
	CreatedAt string `json:"created_at"`
	// CompletedAt is the completion time; absent until terminal.
	CompletedAt *string `json:"completed_at,omitempty"`
}

// ListItem is one task in the answer to GET /v1/tasks.
type ListItem struct {
	// ID is the task id.
	ID string `json:"id"`
	// Object is always "task".
	Object string `json:"object"`
	// Status is the task status.
	Status string `json:"status"`
	// Model is the model id.
	Model string `json:"model"`
	// Type is "image" or "video".
	Type string `json:"type"`
	// Progress is a percentage.
	Progress int `json:"progress"`
	// Error is the reason of a failed task.
	Error string `json:"error,omitempty"`
	// CreatedAt is the creation time, ISO 8601 with milliseconds.
	CreatedAt string `json:"created_at"`
	// CompletedAt is the completion time; null until terminal.
	CompletedAt *string `json:"completed_at"`
}

// ListView is the answer to GET /v1/tasks (contract 2.5).
type ListView struct {
	// Object is always "list".
	Object string `json:"object"`
	// Data holds the tasks, most recent first.
	Data []ListItem `json:"data"`
	// HasMore says whether older tasks follow: ask for them with
	// after=<the last task's id>.
	HasMore bool `json:"has_more"`
}

// CreateView returns the create response of t.
func (t *Task) CreateView() CreateView {
	return CreateView{
		ID: t.ID, Object: "task", Status: t.Status, Model: t.Model, Type: t.Type,
		CreatedAt: formatTime(t.CreatedAt), Output: t.Output, Error: t.Error,
	}
}

// QueryView returns the query response of t.
func (t *Task) QueryView() QueryView {
	return QueryView{
		ID: t.ID, Object: "task", Status: t.Status, Model: t.Model, Type: t.Type,
		Progress: t.Progress, Output: t.Output, Error: t.Error,
		CreatedAt: formatTime(t.CreatedAt), CompletedAt: completedAt(t),
	}
}

// ListItem returns t as an item of a task list.
func (t *Task) ListItem() ListItem {
	return ListItem{
		ID: t.ID, Object: "task", Status: t.Status, Model: t.Model, Type: t.Type,
		Progress: t.Progress, Error: t.Error,
		CreatedAt: formatTime(t.CreatedAt), CompletedAt: completedAt(t),
	}
}

// NewListView returns the list response holding tasks, in the given order;
// hasMore says whether more follow.
func NewListView(tasks []*Task, hasMore bool) ListView {
	v := ListView{Object: "list", Data: make([]ListItem, 0, len(tasks)), HasMore: hasMore}
	for _, t := range tasks {
		v.Data = append(v.Data, t.ListItem())
	}
	return v
}

func completedAt(t *Task) *string {
	if t.CompletedAt == nil || !t.Terminal() {
		return nil
	}
	s := formatTime(*t.CompletedAt)
	return &s
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// randomID returns n random bytes in lowercase unpadded base32.
func randomID(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

// newTaskID returns a fresh, unguessable task id (128 random bits).
func newTaskID() (string, error) {
	s, err := randomID(16)
	if err != nil {
		return "", err
	}
	return "task_" + s, nil
}
