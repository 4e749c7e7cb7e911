package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// mediaModel is the video model of scenario 7, routed to the mock
// provider, whose videos take mockVideoDuration.
const (
	mediaModel        = "mock-video"
	mockVideoDuration = time.Second
)

// mediaDir is the folder of caddy-air's storage directory that holds its
// media files.
const mediaDir = "media"

// mediaResult is what scenario 7 measures beside its download runs.
type mediaResult struct {
	// Size is the length of the media file in bytes, Concurrency the
	// downloads at once, PerConn the downloads of each in a round.
	Size                 int64
	Concurrency, PerConn int
	// Rehosts are caddy-air's re-hosts of the file, one per round.
	Rehosts []rehostRun
	// RangeErr says, per target label, what was wrong with the answer to
	// "Range: bytes=0-1023" ("" when it was a 206 of the file's first
	// 1,024 bytes).
	RangeErr map[string]string
}

// rehostRun is the RSS of caddy-air around one re-host of a task's output:
// before the task was created, the largest sample until 2 s after it
// succeeded, and the median over that last second.
type rehostRun struct {
	Before, Peak, After int64
	// Took is the time from creating the task to its success (the mock
	// video takes mockVideoDuration; the gateway polls every 5 s).
	Took time.Duration
}

// mediaScenario is scenario 7: in each round, against fresh processes,
// caddy-air runs a video task whose output (opts.mediaSize bytes) it
// re-hosts into its media store, sampled for RSS; then both targets serve
// that same file, caddy-air with air_media and bare Caddy with file_server
// on caddy-air's media directory: a range request, then
// opts.mediaConcurrency concurrent downloads, opts.mediaDownloads each.
func (b *bench) mediaScenario(ctx context.Context, mediaDir string) (*scenario, error) {
	o := b.opts
	size := int64(o.mediaSize) << 20
	mr := &mediaResult{Size: size, Concurrency: o.mediaConcurrency, PerConn: o.mediaDownloads, RangeErr: map[string]string{}}
	sc := &scenario{
		ID:    7,
		Title: fmt.Sprintf("7. media download, %d MiB, %d at once", o.mediaSize, o.mediaConcurrency),
		Runs:  map[string][]run{},
		Media: mr,
	}
	bare, air := b.targets[0], b.targets[1]
	for i := range o.rounds {
		if err := b.restart(ctx); err != nil {
			return nil, err
		}
		rh, id, err := rehost(ctx, air, size)
		if err != nil {
			return nil, fmt.Errorf("scenario 7: re-hosting: %v", err)
		}
		mr.Rehosts = append(mr.Rehosts, rh)
		b.logf("scenario 7 round %d re-host of %d MiB: RSS before %.1f MiB, peak %.1f MiB, after %.1f MiB, %v",
			i+1, o.mediaSize, mib(rh.Before), mib(rh.Peak), mib(rh.After), rh.Took.Round(100*time.Millisecond))
		urls := map[*target]string{air: air.proc.URL("/media/" + id), bare: bare.proc.URL("/media/" + id)}
		if i == 0 {
			want, err := readHead(mediaDir, id, 1024)
			if err != nil {
				return nil, err
			}
			for _, t := range b.targets {
				if err := checkRange(ctx, urls[t], want, size); err != nil {
					mr.RangeErr[t.Label()] = err.Error()
				} else {
					mr.RangeErr[t.Label()] = ""
				}
			}
		}
		for _, t := range b.order(i) {
			client := newClient(o.mediaConcurrency)
			// One unmeasured download: the file in the page cache, the
			// connection path warm, for both alike.
			if _, err := download(ctx, client, urls[t], size); err != nil {
				return nil, fmt.Errorf("scenario 7: warm-up against %s: %v", t.Label(), err)
			}
			m0, err := processMem(t.proc.PID())
			if err != nil {
				return nil, err
			}
			r, _, err := measure(t, func() result {
				return downloads(ctx, client, urls[t], size, o.mediaConcurrency, o.mediaDownloads)
			})
			client.CloseIdleConnections()
			if err != nil {
				return nil, err
			}
			r.IdleRSS = m0.RSS
			b.logf("scenario 7 round %d %-10s %5.1f downloads/s  p50 %6.0f ms  CPU %6.0f µs/download  RSS %6.1f → peak %6.1f MiB  errors %d %s",
				i+1, t.Label(), r.RPS(), ms(percentile(r.Latencies, 0.5)), r.CPUPerRequest(), mib(r.IdleRSS), mib(r.PeakRSS), r.Errors, r.FirstError)
			sc.Runs[t.Label()] = append(sc.Runs[t.Label()], r)
		}
	}
	return sc, nil
}

// rehost creates a video task of size bytes on caddy-air, waits for it to
// succeed while sampling the process's RSS, and returns the RSS figures
// and the id of the re-hosted file.
func rehost(ctx context.Context, t *target, size int64) (rehostRun, string, error) {
	var rh rehostRun
	pid := t.proc.PID()
	time.Sleep(time.Second) // let the start settle
	m, err := processMem(pid)
	if err != nil {
		return rh, "", err
	}
	rh.Before = m.RSS
	s := startSampler(pid, 100*time.Millisecond)
	defer s.Stop()
	start := time.Now()
	body := fmt.Sprintf(`{"model":%q,"prompt":"a long take of waves at dusk","mock_content_bytes":%d}`, mediaModel, size)
	status, task, err := call(ctx, http.MethodPost, t.proc.URL("/v1/tasks"), t.key, body)
	if err != nil {
		return rh, "", err
	}
	if status != http.StatusAccepted && status != http.StatusOK {
		return rh, "", fmt.Errorf("POST /v1/tasks: %d: %s", status, task)
	}
	taskID := gjson.GetBytes(task, "id").String()
	deadline := time.Now().Add(2 * time.Minute)
	for gjson.GetBytes(task, "status").String() != "succeeded" {
		if st := gjson.GetBytes(task, "status").String(); st == "failed" || time.Now().After(deadline) {
			return rh, "", fmt.Errorf("task %s: %s", taskID, task)
		}
		select {
		case <-ctx.Done():
			return rh, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if status, task, err = call(ctx, http.MethodGet, t.proc.URL("/v1/tasks/"+url.PathEscape(taskID)), t.key, ""); err != nil {
			return rh, "", err
		} else if status != http.StatusOK {
			return rh, "", fmt.Errorf("GET /v1/tasks/%s: %d: %s", taskID, status, task)
		}
	}
	rh.Took = time.Since(start)
	done := time.Now()
	time.Sleep(2 * time.Second)
	samples := s.Stop()
	rh.Peak = peakSample(samples).RSS
	rh.After = medianRSS(samples, done.Add(time.Second), time.Now().Add(time.Second))
	link := gjson.GetBytes(task, "output.video_url").String()
	id := link[strings.LastIndexByte(link, '/')+1:]
	if id == "" {
		return rh, "", fmt.Errorf("task %s: no video_url: %s", taskID, task)
	}
	return rh, id, nil
}

// call sends one API request with a JSON body (none if empty) and returns
// the status and the body of the answer.
func call(ctx context.Context, method, u, key, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out, err
}

// readHead returns the first n bytes of the media file id in dir.
func readHead(dir, id string, n int) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %v", errNoMedia, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = io.ReadFull(f, b)
	return b, err
}

// checkRange asks u for its first 1,024 bytes and checks that the answer
// is a 206 of exactly want, with the Content-Range of a size-byte file.
func checkRange(ctx context.Context, u string, want []byte, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", "bytes=0-1023")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, size+1))
	if err != nil {
		return err
	}
	if cr := fmt.Sprintf("bytes 0-1023/%d", size); resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != cr {
		return fmt.Errorf("status %d, Content-Range %q, %d bytes; want 206, %q", resp.StatusCode, resp.Header.Get("Content-Range"), len(got), cr)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("206 with %d bytes, not the file's first %d", len(got), len(want))
	}
	return nil
}

// downloads runs conc workers that each download u perConn times, in
// full, and checks every length.
func downloads(ctx context.Context, client *http.Client, u string, size int64, conc, perConn int) result {
	var c collector
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perConn {
				d, err := download(ctx, client, u, size)
				c.add(d, err)
			}
		}()
	}
	wg.Wait()
	return c.result(time.Since(start))
}

// download fetches u whole and checks that it has size bytes.
func download(ctx context.Context, client *http.Client, u string, size int64) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || n != size {
		return 0, fmt.Errorf("status %d with %d bytes, want 200 with %d", resp.StatusCode, n, size)
	}
	return time.Since(start), nil
}

// errNoMedia reports a re-host whose file is not in the media directory.
var errNoMedia = errors.New("the re-hosted file is not in caddy-air's media directory")
