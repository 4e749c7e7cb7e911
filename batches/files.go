package batches

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Purposes of files.
const (
	// PurposeBatch is a batch's input, uploaded by the user.
	PurposeBatch = "batch"
	// PurposeBatchOutput is a batch's output or error file, re-hosted by
	// the gateway.
	PurposeBatchOutput = "batch_output"
)

// File is a stored file as OpenAI's Files API shows it.
type File struct {
	// ID is the file's id, "file-" and 24 hex digits.
	ID string `json:"id"`
	// Object is always "file".
	Object string `json:"object"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// CreatedAt is when it was uploaded (Unix seconds).
	CreatedAt int64 `json:"created_at"`
	// ExpiresAt is when it is deleted (Unix seconds).
	ExpiresAt int64 `json:"expires_at"`
	// Filename is the name it was uploaded with.
	Filename string `json:"filename"`
	// Purpose is PurposeBatch or PurposeBatchOutput.
	Purpose string `json:"purpose"`
	// Status is always "processed".
	Status string `json:"status"`
	// Deleted is set on a deleted file until its record expires (a
	// store may keep it up to a second); it is never shown.
	Deleted bool `json:"deleted,omitempty"`
}

// FileList is the answer of GET /v1/files.
type FileList struct {
	// Object is always "list".
	Object string `json:"object"`
	// Data are the files, newest first.
	Data []File `json:"data"`
	// HasMore says whether older files follow.
	HasMore bool `json:"has_more"`
}

// Owner is who calls: the user whose files and batches are read, and the
// key that calls.
type Owner struct {
	// User owns the files and batches.
	User string
	// KeyID is the calling key's public id.
	KeyID string
	// Allows reports whether the key may use a model; nil allows all.
	Allows func(model string) bool
}

// allows reports whether o's key may use model.
func (o Owner) allows(model string) bool { return o.Allows == nil || o.Allows(model) }

// newID returns prefix and 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// fileNotFound is the answer for a file that does not exist, expired or
// is someone else's: the three cannot be told apart.
func fileNotFound(id string) *apierror.Error {
	return apierror.NotFound("file_not_found", "no file '"+id+"' was found").WithParam("file_id")
}

// Upload stores the content of r, a file named filename uploaded for
// purpose, as a new file of o's. The content is streamed to the media
// store, never held whole: one longer than the size limit is a 413
// file_too_large, a user who holds as many files as allowed gets a 429
// too_many_files.
func (s *Service) Upload(ctx context.Context, o Owner, purpose, filename string, r io.Reader) (*File, *apierror.Error) {
	if purpose != PurposeBatch {
		return nil, apierror.InvalidRequest("purpose", fmt.Sprintf("purpose: '%s' is not supported; use 'batch'", purpose))
	}
	n, aerr := s.countFiles(ctx, o.User)
	if aerr != nil {
		return nil, aerr
	}
	if n >= s.maxFiles {
		return nil, apierror.New(http.StatusTooManyRequests, apierror.TypeInvalidRequest, "too_many_files",
			fmt.Sprintf("this user holds %d files, the most allowed; delete some before uploading more", s.maxFiles))
	}
	return s.putFile(ctx, o.User, newID("file-"), purpose, filename, r, s.maxFileBytes)
}

// putFile stores r as file id of user, at most limit bytes (0: no
// bound).
func (s *Service) putFile(ctx context.Context, user, id, purpose, filename string, r io.Reader, limit int64) (*File, *apierror.Error) {
	now := s.now()
	expires := now.Add(s.fileTTL)
	info, err := s.media.Put(ctx, id, r, store.MediaPut{ContentType: "application/jsonl", Expires: expires, MaxBytes: limit})
	if errors.Is(err, store.ErrTooLarge) {
		return nil, apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeInvalidRequest, "file_too_large",
			fmt.Sprintf("the file is larger than %d bytes, the most allowed", s.maxFileBytes)).WithParam("file")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, apierror.InvalidRequest("file", "the upload ended before the whole file arrived")
		}
		s.log.Error("storing a file", zap.String("file", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	f := &File{ID: id, Object: "file", Bytes: info.Size, CreatedAt: now.Unix(), ExpiresAt: expires.Unix(),
		Filename: filename, Purpose: purpose, Status: "processed"}
	data, _ := json.Marshal(f)
	err = s.files.Insert(context.WithoutCancel(ctx), store.TaskRecord{ID: id, User: user, Created: now, Expires: expires, Data: data})
	if err != nil {
		_ = s.media.Delete(context.WithoutCancel(ctx), id)
		s.log.Error("recording a file", zap.String("file", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	return f, nil
}

// countFiles counts user's files, up to the limit.
func (s *Service) countFiles(ctx context.Context, user string) (int, *apierror.Error) {
	recs, err := s.files.ListByUser(ctx, user, store.TaskCursor{}, s.maxFiles+64)
	if err != nil {
		s.log.Error("counting files", zap.String("user", user), zap.Error(err))
		return 0, apierror.Internal()
	}
	n := 0
	for i := range recs {
		if !deleted(recs[i].Data) {
			n++
		}
	}
	return n, nil
}

// deleted reports whether the stored file data was deleted.
func deleted(data []byte) bool { return gjson.GetBytes(data, "deleted").Bool() }

// GetFile returns file id of o's.
func (s *Service) GetFile(ctx context.Context, o Owner, id string) (*File, *apierror.Error) {
	rec, err := s.files.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.User != o.User {
		return nil, fileNotFound(id)
	}
	if err != nil {
		s.log.Error("reading a file", zap.String("file", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	f := new(File)
	if err := json.Unmarshal(rec.Data, f); err != nil {
		s.log.Error("decoding a file", zap.String("file", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	if f.Deleted {
		return nil, fileNotFound(id)
	}
	return f, nil
}

// ListFiles returns up to limit of o's files, newest first, after file
// after ("" starts with the newest).
func (s *Service) ListFiles(ctx context.Context, o Owner, after string, limit int) (*FileList, *apierror.Error) {
	var cursor store.TaskCursor
	if after != "" {
		rec, err := s.files.Get(ctx, after)
		if err != nil || rec.User != o.User {
			return nil, apierror.InvalidRequest("after", fmt.Sprintf("after: no file '%s' to list after", after))
		}
		cursor = store.TaskCursor{Created: rec.Created, ID: rec.ID}
	}
	recs, err := s.files.ListByUser(ctx, o.User, cursor, limit+1)
	if err != nil {
		s.log.Error("listing files", zap.String("user", o.User), zap.Error(err))
		return nil, apierror.Internal()
	}
	out := &FileList{Object: "list", Data: make([]File, 0, min(limit, len(recs)))}
	for i := range recs {
		if len(out.Data) == limit {
			out.HasMore = true
			break
		}
		var f File
		if err := json.Unmarshal(recs[i].Data, &f); err != nil || f.Deleted {
			continue
		}
		out.Data = append(out.Data, f)
	}
	return out, nil
}

// DeleteFile deletes file id of o's.
func (s *Service) DeleteFile(ctx context.Context, o Owner, id string) *apierror.Error {
	if _, aerr := s.GetFile(ctx, o, id); aerr != nil {
		return aerr
	}
	_, _, err := s.files.Update(ctx, id, func(t *store.TaskRecord) (bool, error) {
		data, err := sjson.SetBytes(t.Data, "deleted", true)
		t.Data, t.Expires = data, s.now()
		return true, err
	})
	if err == nil || errors.Is(err, store.ErrNotFound) {
		err = s.media.Delete(ctx, id)
	}
	if err != nil {
		s.log.Error("deleting a file", zap.String("file", id), zap.Error(err))
		return apierror.Internal()
	}
	return nil
}

// OpenFile returns the content of file id of o's; the caller closes it.
func (s *Service) OpenFile(ctx context.Context, o Owner, id string) (*store.Media, *apierror.Error) {
	if _, aerr := s.GetFile(ctx, o, id); aerr != nil {
		return nil, aerr
	}
	m, err := s.media.Open(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fileNotFound(id)
	}
	if err != nil {
		s.log.Error("opening a file", zap.String("file", id), zap.Error(err))
		return nil, apierror.Internal()
	}
	return m, nil
}
