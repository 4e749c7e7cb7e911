// The official npm SDKs on the endpoints beyond chat: embeddings, image
// generations, model lookup and token counting. Run by the Go test
// TestNodeSDKEndpoints, which starts the gateway, passes GATEWAY_URL and
// AIR_KEY, and then checks the ledger records these calls left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
assert.ok(base && key, 'GATEWAY_URL and AIR_KEY must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });

test('openai: embeddings.create (the SDK asks for base64 and decodes it)', async () => {
  const r = await openai.embeddings.create({ model: 'mock-embed', input: ['one text', 'another text'], dimensions: 5 });
  assert.equal(r.data.length, 2);
  for (const d of r.data) {
    assert.equal(d.embedding.length, 5);
    const norm = d.embedding.reduce((s, x) => s + x * x, 0);
    assert.ok(Math.abs(norm - 1) < 1e-4, `not a unit vector: ${norm}`);
  }
  assert.ok(r.usage.prompt_tokens > 0);
  const f = await openai.embeddings.create({ model: 'mock-embed', input: 'floats', encoding_format: 'float' });
  assert.equal(f.data[0].embedding.length, 8);
});

test('openai: images.generate by url and b64_json', async () => {
  const byURL = await openai.images.generate({ model: 'mock-image', prompt: 'a red fox', size: '256x256', response_format: 'url' });
  assert.equal(byURL.data.length, 1);
  assert.ok(byURL.data[0].url.startsWith(`${base}/media/`), byURL.data[0].url);
  const img = await fetch(byURL.data[0].url);
  assert.equal(img.status, 200);
  assert.equal(img.headers.get('content-type'), 'image/png');
  const b64 = await openai.images.generate({ model: 'mock-image', prompt: 'a blue fox', size: '256x256', n: 2, response_format: 'b64_json' });
  assert.equal(b64.data.length, 2);
  for (const d of b64.data) {
    const png = Buffer.from(d.b64_json, 'base64');
    assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  }
});

test('openai: models.retrieve found and not found', async () => {
  const m = await openai.models.retrieve('mock-embed');
  assert.equal(m.id, 'mock-embed');
  assert.equal(m.object, 'model');
  await assert.rejects(openai.models.retrieve('no-such-model'),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
});

test('anthropic: messages.countTokens and models.retrieve', async () => {
  const n = await anthropic.messages.countTokens({
    model: 'mock-claude',
    messages: [{ role: 'user', content: 'How many tokens are in this sentence?' }],
  });
  assert.ok(n.input_tokens > 0);
  const m = await anthropic.models.retrieve('mock-claude');
  assert.equal(m.id, 'mock-claude');
  assert.equal(m.type, 'model');
  await assert.rejects(anthropic.models.retrieve('claude-nonexistent'), (e) => e instanceof Anthropic.NotFoundError);
});
