// A full batch with the official npm `openai` SDK: upload, create, poll,
// download the output. Run by the Go test TestNodeSDKBatches, which
// starts the gateway, passes GATEWAY_URL and AIR_KEY, and checks the
// ledger afterwards (BATCH_LINES lines at the batch price).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
const lines = Number(process.env.BATCH_LINES);
assert.ok(base && key && lines > 0, 'GATEWAY_URL, AIR_KEY and BATCH_LINES must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });

test('openai: a batch of chat completions, from upload to output', async () => {
  let input = '';
  for (let i = 0; i < lines; i++) {
    input += JSON.stringify({ custom_id: `node-${i}`, method: 'POST', url: '/v1/chat/completions',
      body: { model: 'mock-gpt', messages: [{ role: 'user', content: `question ${i}` }], max_tokens: 30 } }) + '\n';
  }
  const file = await openai.files.create({ file: await toFile(Buffer.from(input), 'input.jsonl'), purpose: 'batch' });
  assert.equal(file.object, 'file');
  assert.equal(file.bytes, Buffer.byteLength(input));
  assert.equal(file.purpose, 'batch');

  let batch = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  assert.equal(batch.object, 'batch');
  assert.equal(batch.input_file_id, file.id);
  const deadline = Date.now() + 30000;
  while (!['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) {
    assert.ok(Date.now() < deadline, `batch still ${batch.status}`);
    await new Promise((r) => setTimeout(r, 200));
    batch = await openai.batches.retrieve(batch.id);
  }
  assert.equal(batch.status, 'completed');
  assert.equal(batch.request_counts.total, lines);
  assert.equal(batch.request_counts.completed, lines);

  const content = await openai.files.content(batch.output_file_id);
  const out = (await content.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(out.length, lines);
  const ids = new Set(out.map((o) => o.custom_id));
  for (let i = 0; i < lines; i++) assert.ok(ids.has(`node-${i}`), `no output for node-${i}`);
  for (const o of out) {
    assert.equal(o.response.status_code, 200);
    assert.equal(o.response.body.object, 'chat.completion');
    assert.ok(o.response.body.usage.prompt_tokens > 0);
  }

  const listed = await openai.batches.list();
  assert.ok(listed.data.some((b) => b.id === batch.id), 'the batch is not listed');
});
