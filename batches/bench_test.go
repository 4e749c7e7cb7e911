package batches

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// zeros reads n bytes of a repeated JSONL line, without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	const line = `{"custom_id":"x","method":"POST","url":"/v1/embeddings","body":{"model":"mock-embed","input":"x"}}` + "\n"
	n := 0
	for n < len(p) && int64(n) < z.n {
		p[n] = line[n%len(line)]
		n++
	}
	z.n -= int64(n)
	return n, nil
}

// BenchmarkUpload uploads a 32 MiB file to the Badger media store: the
// bytes allocated per upload stay far below the file's size, since the
// file is streamed to disk.
func BenchmarkUpload(b *testing.B) {
	e := newEnv(b)
	s := e.service(b, Config{MaxFiles: 1 << 20, MaxFileBytes: 64 << 20})
	ctx := context.Background()
	const size = 32 << 20
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, aerr := s.Upload(ctx, alice, PurposeBatch, "big.jsonl", &zeros{n: size}); aerr != nil {
			b.Fatal(aerr)
		}
	}
}

// BenchmarkCheck checks a batch input of 50,000 chat lines (the most a
// batch may have), line by line from the media store, as a create does
// before anything goes upstream.
func BenchmarkCheck(b *testing.B) {
	e := newEnv(b)
	s := e.service(b, Config{MaxFileBytes: 64 << 20})
	ctx := context.Background()
	const lines = 50000
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, `{"custom_id":"r%d","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"question number %d"}],"max_tokens":64}}`+"\n", i, i)
	}
	f, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(in.String()))
	if aerr != nil {
		b.Fatal(aerr)
	}
	b.SetBytes(int64(in.Len()))
	b.ReportAllocs()
	for b.Loop() {
		p, aerr := s.check(ctx, alice, f.ID, EndpointChat)
		if aerr != nil || p.lines != lines {
			b.Fatal(aerr)
		}
	}
}

// engineBiller charges through a real billing.Engine.
type engineBiller struct{ e *billing.Engine }

func (b engineBiller) Charge(ctx context.Context, rec billing.Record) error {
	_, _, err := b.e.Charge(ctx, rec)
	return err
}

// BenchmarkBill bills the 2,000 lines of a finished batch's output into a
// real ledger on Badger (each line a synchronous, idempotent write), as a
// poller does once the batch ended; every iteration is a new batch.
func BenchmarkBill(b *testing.B) {
	e := newEnv(b)
	pt, err := billing.ParsePrices("bench", []byte(`{"currency":"USD","models":{"mock-chat":{"tiers":[{"input":"2","output":"8"}],"service_tiers":{"batch":"0.5"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	ledger := billing.NewLedger(e.repos.Ledger, e.repos.Intents, nil)
	s := e.service(b, Config{})
	s.biller = engineBiller{billing.NewEngine(pt, ledger, nil)}
	ctx := context.Background()
	const lines = 2000
	var out strings.Builder
	for i := range lines {
		fmt.Fprintf(&out, `{"id":"r%d","custom_id":"c%d","response":{"status_code":200,"body":{"model":"up-chat","usage":{"prompt_tokens":20,"completion_tokens":7}}},"error":null}`+"\n", i, i)
	}
	f, aerr := s.putFile(ctx, "alice", "file-bench", PurposeBatchOutput, "out.jsonl", strings.NewReader(out.String()), 0)
	if aerr != nil {
		b.Fatal(aerr)
	}
	for i := 0; b.Loop(); i++ {
		d := &doc{Batch: Batch{ID: fmt.Sprintf("batch_%d", i)}, Models: map[string]string{"up-chat": "mock-chat"}, Provider: "mock"}
		if err := s.bill(ctx, "alice", d, f.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}
