package batches

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/store"
)

// EndpointBatch is the ledger endpoint of a batch's lines.
const EndpointBatch = billing.EndpointBatch

// ServiceTier is the service tier a batch's lines are priced at: a
// model's "service_tiers": {"batch": "0.5"} halves their price.
const ServiceTier = "batch"

// step advances claimed batch rec by one step: a poll upstream, or, once
// it ended there, the re-hosting of its files and the billing of its
// lines.
func (s *Service) step(ctx context.Context, rec store.TaskRecord) {
	d, err := decodeDoc(&rec)
	if err != nil {
		s.log.Error("claiming a batch", zap.String("batch", rec.ID), zap.Error(err))
		return
	}
	p, ok := s.upstreamOf(d)
	if !ok {
		s.log.Warn("batch's provider is no longer configured", zap.String("batch", d.ID), zap.String("provider", d.Provider))
		s.retry(ctx, d.ID, 0)
		return
	}
	if !terminal(d.Upstream) {
		if s.now().Sub(unix(d.CreatedAt)) > s.maxRunning {
			s.end(ctx, rec.User, d, &upBatch{ID: d.UpstreamID, Status: StatusExpired})
			return
		}
		pctx, cancel := context.WithTimeout(ctx, callTimeout)
		up, err := s.fetch(pctx, p, d.UpstreamID)
		cancel()
		if err != nil {
			s.failed(ctx, d.ID, err)
			return
		}
		if !terminal(up.Status) {
			s.progress(ctx, d.ID, up)
			return
		}
		s.end(ctx, rec.User, d, up)
		return
	}
	s.finish(ctx, rec.User, d)
}

// failed schedules the next poll of a batch whose poll failed; a
// shutdown hands it back at once.
func (s *Service) failed(ctx context.Context, id string, err error) {
	if ctx.Err() != nil {
		s.update(id, func(d *doc, rec *store.TaskRecord) bool { rec.Due = s.now(); return true })
		return
	}
	s.log.Warn("polling a batch", zap.String("batch", id), zap.Error(err))
	var ue *upstreamError
	var after time.Duration
	if errors.As(err, &ue) {
		after = ue.retryAfter
	}
	s.retry(ctx, id, after)
}

// retry puts the next poll of batch id off by the backoff.
func (s *Service) retry(_ context.Context, id string, retryAfter time.Duration) {
	s.update(id, func(d *doc, rec *store.TaskRecord) bool {
		d.Failures++
		rec.Due = s.now().Add(s.backoff.Next(d.Failures, retryAfter))
		return true
	})
}

// progress records what a poll of a running batch saw.
func (s *Service) progress(_ context.Context, id string, up *upBatch) {
	s.update(id, func(d *doc, rec *store.TaskRecord) bool {
		now := s.now()
		d.Failures, d.Upstream = 0, up.Status
		if d.Status != StatusCancelling || up.Status == StatusCancelling {
			d.Status = up.Status
		}
		d.RequestCounts = up.Counts
		stamp(&d.Batch, up.Status, now)
		rec.Due = now.Add(s.poll)
		return true
	})
}

// stamp sets the time b reached status, once.
func stamp(b *Batch, status string, now time.Time) {
	var at **int64
	switch status {
	case StatusInProgress:
		at = &b.InProgressAt
	case StatusFinalizing:
		at = &b.FinalizingAt
	case StatusCompleted:
		at = &b.CompletedAt
	case StatusFailed:
		at = &b.FailedAt
	case StatusExpired:
		at = &b.ExpiredAt
	case StatusCancelling:
		at = &b.CancellingAt
	case StatusCancelled:
		at = &b.CancelledAt
	default:
		return
	}
	if *at == nil {
		*at = ptr(now.Unix())
	}
}

// end records that batch d ended upstream as up says, and goes on to
// finish it.
func (s *Service) end(ctx context.Context, user string, d *doc, up *upBatch) {
	d, ok := s.update(d.ID, func(d *doc, rec *store.TaskRecord) bool {
		d.Upstream, d.UpstreamOutput, d.UpstreamErrors = up.Status, up.OutputFileID, up.ErrorFileID
		if up.Counts.Total > 0 {
			d.RequestCounts = up.Counts
		}
		if up.Errors != nil {
			d.Errors = up.Errors
		}
		rec.Due = s.now()
		return true
	})
	if ok {
		s.finish(ctx, user, d)
	}
}

// finish re-hosts the output and error files of batch d, which ended
// upstream, bills every line of its output, and ends it. Each step is
// idempotent: a poller that takes it over after a crash does it again,
// and the ledger keeps each line once.
func (s *Service) finish(ctx context.Context, user string, d *doc) {
	p, _ := s.upstreamOf(d)
	out, aerr := s.rehost(ctx, p, user, d.ID, "out", d.UpstreamOutput)
	if aerr == nil {
		_, aerr = s.rehost(ctx, p, user, d.ID, "err", d.UpstreamErrors)
	}
	if aerr != nil {
		s.failed(ctx, d.ID, aerr)
		return
	}
	if out != "" {
		if err := s.bill(ctx, user, d, out); err != nil {
			s.failed(ctx, d.ID, err)
			return
		}
	}
	d, ok := s.update(d.ID, func(d *doc, rec *store.TaskRecord) bool {
		now := s.now()
		if d.UpstreamOutput != "" {
			d.OutputFileID = ptr(rehostID(d.ID, "out"))
		}
		if d.UpstreamErrors != "" {
			d.ErrorFileID = ptr(rehostID(d.ID, "err"))
		}
		d.Status, d.Billed, d.Failures = d.Upstream, true, 0
		stamp(&d.Batch, d.Status, now)
		rec.Working = false
		return true
	})
	if ok {
		s.holds.Release(d.ID)
	}
}

// rehostID is the id of file kind ("out" or "err") of batch id: the same
// on every attempt.
func rehostID(id, kind string) string { return "file-" + kind + "-" + id }

// rehost copies upstream file upID of batch id to file rehostID(id,
// kind) of user's, streamed, and returns its id ("" when upID is).
func (s *Service) rehost(ctx context.Context, p upTarget, user, id, kind, upID string) (string, error) {
	if upID == "" {
		return "", nil
	}
	fid := rehostID(id, kind)
	if _, err := s.files.Get(ctx, fid); err == nil {
		return fid, nil // re-hosted by an earlier attempt
	}
	// An earlier attempt may have stored the content and died before its
	// record: store it again.
	if err := s.media.Delete(ctx, fid); err != nil {
		return "", err
	}
	dctx, cancel := context.WithTimeout(ctx, s.lease/2)
	defer cancel()
	var aerr *apierror.Error
	_, err := s.call(dctx, p, http.MethodGet, "/files/"+url.PathEscape(upID)+"/content", "", nil, func(r io.Reader) error {
		// An output is as large as the provider made it (an embeddings
		// batch's is many times its input): it is not bounded by the
		// upload limit.
		_, aerr = s.putFile(dctx, user, fid, PurposeBatchOutput, id+"_"+kind+".jsonl", r, 0)
		if aerr != nil {
			return aerr
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fid, nil
}

// bill records every line of output file fid of batch d that the
// provider answered with usage: one ledger record per line, id
// "<batch id>/<custom_id>", at service tier "batch".
func (s *Service) bill(ctx context.Context, user string, d *doc, fid string) error {
	if s.biller == nil {
		return nil
	}
	m, err := s.media.Open(ctx, fid)
	if err != nil {
		return err
	}
	defer m.Content.Close()
	br := bufio.NewReaderSize(m.Content, 64<<10)
	for {
		line, err := readLine(br, maxOutputLine)
		if len(line) > 0 {
			if rec, ok := s.lineRecord(user, d, line); ok {
				if err := s.biller.Charge(ctx, rec); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// maxOutputLine bounds a line of a batch's output.
const maxOutputLine = 16 << 20

// lineRecord is the ledger record of output line line of batch d; false
// when the line has no answer to bill (an error line).
func (s *Service) lineRecord(user string, d *doc, line []byte) (billing.Record, bool) {
	v := gjson.ParseBytes(line)
	cid := v.Get("custom_id").String()
	status := v.Get("response.status_code").Int()
	body := v.Get("response.body")
	if cid == "" || status/100 != 2 || !body.IsObject() {
		return billing.Record{}, false
	}
	upModel := body.Get("model").String()
	model, ok := d.Models[upModel]
	if !ok {
		// A provider that answers with a dated model name: the batch's
		// first model.
		for _, m := range d.Models {
			model = m
			break
		}
	}
	rec := billing.Record{
		ID: d.ID + "/" + cid, Time: s.now().UTC(), Endpoint: EndpointBatch, User: user, KeyID: d.KeyID,
		Model: model, ServedModel: d.ServedModel, Provider: d.Provider, Deployment: d.Deployment, Source: billing.SourceReported,
		Status: int(status), Outcome: billing.OutcomeOK, ServiceTier: ServiceTier,
	}
	if u := body.Get("usage"); u.IsObject() {
		if usage, err := openai.NormalizeUsage([]byte(u.Raw)); err == nil {
			rec.Usage = usage
		}
	}
	return rec, true
}

// update applies fn to stored batch id and its record, atomically, and
// returns the batch as fn left it.
func (s *Service) update(id string, fn func(d *doc, rec *store.TaskRecord) bool) (*doc, bool) {
	var out *doc
	_, _, err := s.batches.Update(context.Background(), id, func(rec *store.TaskRecord) (bool, error) {
		d, err := decodeDoc(rec)
		if err != nil || !d.working() {
			return false, err
		}
		if !fn(d, rec) {
			return false, nil
		}
		data, err := marshal(d)
		if err != nil {
			return false, err
		}
		out, rec.Data, rec.Working = d, data, rec.Working && d.working()
		return true, nil
	})
	if err != nil {
		s.log.Error("updating a batch", zap.String("batch", id), zap.Error(err))
		return nil, false
	}
	return out, out != nil
}

// Cancel asks the provider to cancel batch id of o's; the batch is
// cancelling until the provider says it ended, and is billed for what
// completed.
func (s *Service) Cancel(ctx context.Context, o Owner, id string) (*Batch, *apierror.Error) {
	d, aerr := s.load(ctx, o, id)
	if aerr != nil {
		return nil, aerr
	}
	if terminal(d.Status) || d.Status == StatusCancelling || terminal(d.Upstream) {
		return &d.Batch, nil
	}
	p, ok := s.upstreamOf(d)
	if !ok {
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_error", "the batch's provider is no longer configured")
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	_, err := s.call(cctx, p, http.MethodPost, "/batches/"+url.PathEscape(d.UpstreamID)+"/cancel", "", nil, nil)
	cancel()
	if err != nil {
		s.log.Warn("cancelling a batch", zap.String("batch", id), zap.Error(err))
		msg := "the provider could not be reached"
		var ue *upstreamError
		if errors.As(err, &ue) {
			msg = ue.Error()
		}
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_error", "the provider did not cancel the batch: "+msg)
	}
	nd, ok := s.update(id, func(d *doc, rec *store.TaskRecord) bool {
		d.Status = StatusCancelling
		stamp(&d.Batch, StatusCancelling, s.now())
		rec.Due = s.now()
		return true
	})
	if !ok {
		return &d.Batch, nil
	}
	return &nd.Batch, nil
}

// sweepHolds ends the holds of batches that ended elsewhere or are gone.
func (s *Service) sweepHolds(ctx context.Context) {
	s.holds.Sweep(ctx, func(ctx context.Context, id string) (bool, error) {
		rec, err := s.batches.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return !rec.Working, nil
	}, func(id string, err error) {
		s.log.Warn("checking a held batch", zap.String("batch", id), zap.Error(err))
	})
}
