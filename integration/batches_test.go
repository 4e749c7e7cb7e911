package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/shopspring/decimal"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/mockprovider"
)

// batchPrices halve mock-gpt's and mock-embed's price for batch lines.
const batchPrices = `{"currency":"USD","models":{
	"mock-gpt":{"tiers":[{"input":"2","output":"8"}],"service_tiers":{"batch":"0.5"}},
	"mock-embed":{"embedding":"0.02","service_tiers":{"batch":"0.5"}}}}`

// batchLines is a JSONL batch input of n chat requests for model.
func batchLines(model string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"line-%d","method":"POST","url":"/v1/chat/completions","body":{"model":%q,"messages":[{"role":"user","content":"question %d"}],"max_tokens":50}}`+"\n", i, model, i)
	}
	return b.String()
}

// batchCost is a mock-gpt batch line's cost: half of 2 USD per million
// input and 8 per million output tokens.
func batchCost(r ledgerRecord) decimal.Decimal {
	in := decimal.NewFromInt(r.Usage.Input).Mul(decimal.RequireFromString("2"))
	out := decimal.NewFromInt(r.Usage.Output).Mul(decimal.RequireFromString("8"))
	return in.Add(out).Div(decimal.NewFromInt(1_000_000)).Mul(decimal.RequireFromString("0.5"))
}

// runBatch uploads input, creates a chat batch of it and polls it until
// it ends, with openai-go.
func runBatch(t *testing.T, c openai.Client, input string) *openai.Batch {
	t.Helper()
	ctx := context.Background()
	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(input), "input.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatalf("files.create: %v", err)
	}
	if f.Bytes != int64(len(input)) || f.Purpose != openai.FileObjectPurposeBatch || !strings.HasPrefix(f.ID, "file-") {
		t.Fatalf("uploaded file %+v", f)
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatalf("batches.create: %v", err)
	}
	eventually(t, 30*time.Second, "the batch to complete", func() bool {
		if b, err = c.Batches.Get(ctx, b.ID); err != nil {
			t.Fatalf("batches.retrieve: %v", err)
		}
		return b.Status == openai.BatchStatusCompleted || b.Status == openai.BatchStatusFailed
	})
	return b
}

// TestBatchesOpenAIGo: a full batch with the official Go SDK (upload,
// create, poll, download the output), billed one ledger record per line
// at the batch price; listing and the user's isolation.
func TestBatchesOpenAIGo(t *testing.T) {
	startGateway(t, gatewayOptions{Extra: "batches {\n\t\t\tpoll_interval 200ms\n\t\t}", Prices: batchPrices})
	key, _ := createKey(t, "batcher")
	c := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	b := runBatch(t, c, batchLines("mock-gpt", 4))
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Total != 4 || b.RequestCounts.Completed != 4 || b.OutputFileID == "" {
		t.Fatalf("batch %+v", b)
	}
	resp, err := c.Files.Content(context.Background(), b.OutputFileID)
	if err != nil {
		t.Fatalf("files.content: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `"custom_id":"line-`) || !strings.Contains(lines[0], `"status_code":200`) {
		t.Fatalf("output: %s", out)
	}
	recs := waitLedger(t, "batcher", 4)
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.ID] = true
		if r.Endpoint != "batch" || r.ServiceTier != "batch" || r.Model != "mock-gpt" || !r.Priced || !strings.HasPrefix(r.ID, b.ID+"/line-") ||
			r.Usage.Input == 0 || r.Usage.Output == 0 || !sameDecimal(r.Cost, batchCost(r).String()) {
			t.Errorf("record %+v, want a batch line at cost %s", r, batchCost(r))
		}
	}
	if len(seen) != 4 {
		t.Errorf("records %v, want one per line", seen)
	}
	// Listed for its user, invisible to another.
	page, err := c.Batches.List(context.Background(), openai.BatchListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID {
		t.Fatalf("batches.list: %v %+v", err, page)
	}
	// The input can be listed and deleted; deleted, it is gone.
	files, err := c.Files.List(context.Background(), openai.FileListParams{})
	if err != nil || len(files.Data) != 2 {
		t.Fatalf("files.list: %v, %d files; want the input and the output", err, len(files.Data))
	}
	del, err := c.Files.Delete(context.Background(), b.InputFileID)
	if err != nil || !del.Deleted || del.ID != b.InputFileID {
		t.Fatalf("files.delete: %+v %v", del, err)
	}
	var apiErr *openai.Error
	if _, err := c.Files.Get(context.Background(), b.InputFileID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("files.retrieve of a deleted file: %v, want 404", err)
	}
	other, _ := createKey(t, "someone-else")
	if status, _, _ := call(t, http.MethodGet, "/v1/batches/"+b.ID, other, ""); status != http.StatusNotFound {
		t.Errorf("another user's GET of the batch: %d, want 404", status)
	}
	if status, _, _ := call(t, http.MethodGet, "/v1/files/"+b.OutputFileID+"/content", other, ""); status != http.StatusNotFound {
		t.Errorf("another user's GET of the output: %d, want 404", status)
	}
}

// upload posts a batch file with a plain multipart client.
func upload(t *testing.T, key, content string) (int, []byte) {
	t.Helper()
	return uploadParts(t, key, func(mw *multipart.Writer) {
		fw, _ := mw.CreateFormFile("file", "in.jsonl")
		_, _ = io.WriteString(fw, content)
		_ = mw.WriteField("purpose", "batch")
	})
}

// uploadParts posts the multipart form that parts writes to /v1/files.
func uploadParts(t *testing.T, key string, parts func(mw *multipart.Writer)) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	parts(mw)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/files", &body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestBatchesBadInput: a JSONL with a malformed line, an oversized
// upload, a batch for a model the key may not use: each a clear error in
// OpenAI's shape through the SDK, and nothing billed.
func TestBatchesBadInput(t *testing.T) {
	startGateway(t, gatewayOptions{Extra: "batches {\n\t\t\tmax_file_size 64KiB\n\t\t\tpoll_interval 200ms\n\t\t}", Prices: batchPrices})
	key, _ := createScopedKey(t, "bad-batcher", `"models":["mock-embed"]`)
	c := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	create := func(input string) error {
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(input), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatalf("files.create: %v", err)
		}
		_, err = c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1Embeddings,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		return err
	}
	embed := `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"mock-embed","input":"x"}}` + "\n"
	for _, tc := range []struct {
		name, input, code, want string
	}{
		{"malformed line", embed + "{\"custom_id\": \"b\", oops\n", "invalid_batch_input", "line 2: not valid JSON"},
		{"model not allowed", embed + strings.ReplaceAll(strings.ReplaceAll(embed, `"a"`, `"b"`), "mock-embed", "mock-gpt"), "model_not_allowed", "line 2: this key may not use model 'mock-gpt'"},
	} {
		var apiErr *openai.Error
		err := create(tc.input)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != tc.code || !strings.Contains(apiErr.Message, tc.want) {
			t.Errorf("%s: %v, want 400 %s %q", tc.name, err, tc.code, tc.want)
		}
	}
	status, body := upload(t, key, strings.Repeat(embed, 1000))
	if e := decodeError(t, body); status != http.StatusRequestEntityTooLarge || e.code() != "file_too_large" {
		t.Errorf("oversized upload: %d %s, want 413 file_too_large", status, body)
	}
	for _, tc := range []struct {
		name, param string
		parts       func(mw *multipart.Writer)
	}{
		{"no file", "file", func(mw *multipart.Writer) { _ = mw.WriteField("purpose", "batch") }},
		{"two files", "file", func(mw *multipart.Writer) {
			for range 2 {
				fw, _ := mw.CreateFormFile("file", "in.jsonl")
				_, _ = io.WriteString(fw, embed)
			}
			_ = mw.WriteField("purpose", "batch")
		}},
		{"no purpose", "purpose", func(mw *multipart.Writer) {
			fw, _ := mw.CreateFormFile("file", "in.jsonl")
			_, _ = io.WriteString(fw, embed)
		}},
	} {
		status, body := uploadParts(t, key, tc.parts)
		if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s, want 400 about %s", tc.name, status, body, tc.param)
		}
	}
	if files, err := c.Files.List(ctx, openai.FileListParams{}); err != nil || len(files.Data) != 2 {
		t.Errorf("files after the refused uploads: %v, %d; want the two batches' inputs only", err, len(files.Data))
	}
	if recs := ledgerOf(t, "bad-batcher"); len(recs) != 0 {
		t.Errorf("refused batches were billed: %+v", recs)
	}
	// A good batch of the allowed model runs.
	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(embed), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1Embeddings,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); err != nil {
		t.Fatalf("a good batch: %v", err)
	}
	recs := waitLedger(t, "bad-batcher", 1)
	if recs[0].Endpoint != "batch" || recs[0].Model != "mock-embed" || recs[0].ServiceTier != "batch" {
		t.Errorf("record %+v", recs[0])
	}
}

// TestBatchKill: the gateway is killed (SIGKILL) while a batch runs on an
// outside provider; the next process takes it over and bills each line
// exactly once, and a clean restart bills nothing again.
func TestBatchKill(t *testing.T) {
	upstream := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "ext-key"}))
	defer upstream.Close()
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, fmt.Sprintf(`		batches {
			poll_interval 200ms
			lease 31s
		}
		provider ext {
			protocol openai
			base_url %s/v1
			api_key ext-key
		}
		model ext-gpt ext`, upstream.URL))
	withPrices(t, cfg, strings.ReplaceAll(batchPrices, "mock-gpt", "ext-gpt"))
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "batch-survivor", "--config", cfg))
	c := openai.NewClient(option.WithBaseURL(p.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	const n = 20
	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(batchLines("ext-gpt", n)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the batch runs upstream for 3 s
	p.sigkill()

	p = startProcess(t, cfg, dataDir)
	c = openai.NewClient(option.WithBaseURL(p.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	eventually(t, 30*time.Second, "the batch billed after the restart", func() bool {
		got, err := c.Batches.Get(ctx, b.ID)
		return err == nil && got.Status == openai.BatchStatusCompleted && len(procLedger(t, "batch-survivor")) >= n
	})
	p.stop()
	p = startProcess(t, cfg, dataDir)
	time.Sleep(time.Second)
	recs := procLedger(t, "batch-survivor")
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.ID]++
		if r.Endpoint != "batch" || !sameDecimal(r.Cost, batchCost(r).String()) {
			t.Errorf("record %+v, want cost %s", r, batchCost(r))
		}
	}
	if len(recs) != n || len(seen) != n {
		t.Fatalf("%d records (%d ids) for %d lines", len(recs), len(seen), n)
	}
}

// TestNodeSDKBatches runs integration/node/batches.test.mjs (the npm
// `openai` SDK runs a full batch), then checks that each of its lines is
// on the ledger once, at the batch price.
func TestNodeSDKBatches(t *testing.T) {
	startGateway(t, gatewayOptions{Extra: "batches {\n\t\t\tpoll_interval 200ms\n\t\t}", Prices: batchPrices})
	key, _ := createKey(t, "node-batcher")
	if _, err := os.Stat("node/node_modules/openai"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	const lines = 5
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "batches.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key, fmt.Sprintf("BATCH_LINES=%d", lines))
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK batch test failed: %v", err)
	}
	recs := waitLedger(t, "node-batcher", lines)
	for _, r := range recs {
		if r.Endpoint != "batch" || r.ServiceTier != "batch" || !strings.Contains(r.ID, "/node-") || !sameDecimal(r.Cost, batchCost(r).String()) {
			t.Errorf("record %+v, want a batch line at cost %s", r, batchCost(r))
		}
	}
}

// TestPostgresBatchKill: two instances on one PostgreSQL database poll a
// batch created through the first; the first is killed (SIGKILL) while
// the batch runs upstream, and the second takes it over: each line is on
// the ledger once.
func TestPostgresBatchKill(t *testing.T) {
	t.Setenv("AIR_TEST_BATCH_PG_DSN", pgtest.DSN(t))
	upstream := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "ext-key"}))
	defer upstream.Close()
	dataA, dataB := t.TempDir(), t.TempDir()
	cfgA := quickstartConfig(t, dataA, fmt.Sprintf(`		batches {
			poll_interval 200ms
			lease 31s
		}
		provider ext {
			protocol openai
			base_url %s/v1
			api_key ext-key
		}
		model ext-gpt ext`, upstream.URL))
	withPrices(t, cfgA, strings.ReplaceAll(batchPrices, "mock-gpt", "ext-gpt"))
	a, b, _ := twoInstances(t, cfgA, dataA, dataB, "AIR_TEST_BATCH_PG_DSN")
	defer b.stop()
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "batch-two", "--config", cfgA))
	ctx := context.Background()
	const n = 12
	ca := openai.NewClient(option.WithBaseURL(a.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	f, err := ca.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(batchLines("ext-gpt", n)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := ca.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	a.sigkill()

	cb := openai.NewClient(option.WithBaseURL(b.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	conn, err := pgx.Connect(ctx, os.Getenv("AIR_TEST_BATCH_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() (rows, distinct int) {
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM air_ledger WHERE user_name = 'batch-two'`).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	eventually(t, 60*time.Second, "the batch billed by the second instance", func() bool {
		got, err := cb.Batches.Get(ctx, batch.ID)
		rows, _ := count()
		return err == nil && got.Status == openai.BatchStatusCompleted && rows >= n
	})
	time.Sleep(time.Second) // the second's poller had its chance to bill again
	if rows, distinct := count(); rows != n || distinct != n {
		t.Fatalf("%d records (%d ids) for %d lines, want one each", rows, distinct, n)
	}
}

// TestBatchBudgetHold: a batch reserves its estimate (at the batch
// price) against the key's spend limit when it is created and holds it
// while it runs: a key with less left than the batch's estimate starts
// it and is refused a second while it runs; once it ends, the hold gives
// way to its lines' charges.
func TestBatchBudgetHold(t *testing.T) {
	startGateway(t, gatewayOptions{Extra: "batches {\n\t\t\tpoll_interval 200ms\n\t\t}", Prices: batchPrices})
	key, keyID := createKey(t, "thrifty-batcher")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"10"}`, nil); status != http.StatusOK {
		t.Fatalf("set limit: %d", status)
	}
	// Four lines that may each write a million tokens: 4 × 8 USD × 0.5.
	input := strings.ReplaceAll(batchLines("mock-gpt", 4), `"max_tokens":50`, `"max_tokens":1000000`)
	create := func() (int, []byte) {
		status, body := upload(t, key, input)
		if status != http.StatusOK {
			t.Fatalf("upload: %d %s", status, body)
		}
		var f struct{ ID string }
		_ = json.Unmarshal(body, &f)
		status, _, raw := call(t, http.MethodPost, "/v1/batches", key, `{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
		return status, raw
	}
	status, raw := create()
	if status != http.StatusOK {
		t.Fatalf("first batch: %d %s", status, raw)
	}
	var b struct{ ID, Status string }
	_ = json.Unmarshal(raw, &b)
	sixteen, _ := billing.ParseAmount("16")
	if got := keyUSD(t, keyID); got.Reserved <= sixteen || got.Total != 0 {
		t.Fatalf("while the batch runs: %+v, want more than 16 USD reserved", got)
	}
	status, raw = create()
	if status != http.StatusTooManyRequests || decodeError(t, raw).code() != "insufficient_quota" {
		t.Fatalf("second batch while the first runs: %d %s, want 429 insufficient_quota", status, raw)
	}
	recs := waitLedgerWithin(t, "thrifty-batcher", 4, 30*time.Second)
	total := decimal.Zero
	for _, r := range recs {
		total = total.Add(decimal.RequireFromString(r.Cost))
	}
	want, _ := billing.ParseAmount(total.String())
	eventually(t, 10*time.Second, "the hold to give way to the charges", func() bool {
		got := keyUSD(t, keyID)
		return got.Reserved == 0 && got.Total == want
	})
}

// waitLedgerWithin is waitLedger with its own wait.
func waitLedgerWithin(t *testing.T, user string, n int, within time.Duration) []ledgerRecord {
	t.Helper()
	var recs []ledgerRecord
	eventually(t, within, fmt.Sprintf("%d ledger records for %s", n, user), func() bool {
		recs = ledgerOf(t, user)
		return len(recs) >= n
	})
	if len(recs) != n {
		t.Fatalf("%d ledger records for %s, want %d", len(recs), user, n)
	}
	return recs
}
