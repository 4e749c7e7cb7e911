// The npm Anthropic SDK against every kind of translated provider: an
// `openai` model (the mock's mock-gpt and mock-reasoner, and rec-gpt and
// rec-gpt2, a test upstream that fails on demand), the gemini and vertex
// models of the mock's fake Google front, and a bedrock model. Run by the
// Go test TestNodeAnthropicMatrix, which starts the gateway, passes
// GATEWAY_URL and AIR_KEY, and checks the exact cost of every answer this
// file writes to USAGE_OUT (its Request-Id, model and usage) against the
// ledger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
const out = process.env.USAGE_OUT;
assert.ok(base && key && out, 'GATEWAY_URL, AIR_KEY and USAGE_OUT must be set');

const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
const weather = {
  name: 'get_weather', description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

// priced notes an answer whose ledger record the Go test prices.
function priced(id, model, usage) {
  assert.ok(id, 'no Request-Id');
  appendFileSync(out, JSON.stringify({ id, model, usage }) + '\n');
}

// image sends a text and a base64 PNG, then the text alone: the image's
// tokens reached the provider, and both answers are priced.
async function image(model) {
  const text = { type: 'text', text: 'What is this?' };
  const img = await anthropic.messages.create({
    model, max_tokens: 256,
    messages: [{ role: 'user', content: [text, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }] }],
  });
  const plain = await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: [text] }] });
  assert.ok(img.content.at(-1).text.length > 0);
  assert.ok(img.usage.input_tokens > plain.usage.input_tokens,
    `the image did not reach ${model}: ${img.usage.input_tokens} input tokens, ${plain.usage.input_tokens} without it`);
  priced(img._request_id, model, img.usage);
  priced(plain._request_id, model, plain.usage);
}

// fails checks an error of the SDK: its class, status, Anthropic error
// type and, if given, its Retry-After.
async function fails(promise, cls, status, type, retryAfter) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof cls, `${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, status);
    assert.equal(e.error?.type, 'error');
    assert.equal(e.error?.error?.type, type);
    assert.ok(e.error.error.message.length > 0);
    if (retryAfter !== undefined) assert.equal(e.headers.get('retry-after'), retryAfter);
    return true;
  });
}

// cut checks that a stream the provider cut is an error for the SDK, after
// the text that came before the cut.
async function cut(model, prompt) {
  const stream = anthropic.messages.stream({ model, max_tokens: 100, messages: [{ role: 'user', content: prompt }] });
  let text = '';
  stream.on('text', (d) => { text += d; });
  await assert.rejects(stream.finalMessage(), (e) => e instanceof Error);
  return text;
}

test('anthropic → openai: a message and a stream', async () => {
  const m = await anthropic.messages.create({
    model: 'mock-gpt', max_tokens: 256, system: 'You are terse.', messages: [{ role: 'user', content: 'Hello from node' }],
  });
  assert.equal(m.type, 'message');
  assert.equal(m.model, 'mock-gpt');
  assert.match(m.content[0].text, /Hello from node/);
  assert.equal(m.stop_reason, 'end_turn');
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
  priced(m._request_id, 'mock-gpt', m.usage);

  const stream = anthropic.messages.stream({ model: 'mock-gpt', max_tokens: 256, messages: [{ role: 'user', content: 'Stream to Claude' }] });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const s = await stream.finalMessage();
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(events.filter((e) => e === 'content_block_delta').length > 1);
  assert.match(s.content[0].text, /Stream to Claude/);
  assert.equal(s.stop_reason, 'end_turn');
  assert.ok(s.usage.input_tokens > 0 && s.usage.output_tokens > 0, 'the stream\'s usage was lost');
  priced(stream.request_id, 'mock-gpt', s.usage);
});

test('anthropic → openai: a streamed tool call, then its result', async () => {
  const q = { role: 'user', content: 'Weather in Oslo?' };
  const stream = anthropic.messages.stream({ model: 'mock-gpt', max_tokens: 256, tools: [weather], messages: [q] });
  let deltas = 0;
  stream.on('inputJson', () => deltas++);
  const m = await stream.finalMessage();
  assert.equal(m.stop_reason, 'tool_use');
  assert.equal(m.content.length, 1);
  const call = m.content[0];
  assert.equal(call.type, 'tool_use');
  assert.equal(call.name, 'get_weather');
  assert.match(call.id, /^call_/, 'the provider\'s call id was not kept');
  assert.ok('city' in call.input, `input ${JSON.stringify(call.input)}`);
  assert.ok(deltas >= 2, `the arguments came in ${deltas} deltas`);
  const r = await anthropic.messages.create({
    model: 'mock-gpt', max_tokens: 256, tools: [weather],
    messages: [q, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '12 degrees and rain' }] }],
  });
  assert.equal(r.stop_reason, 'end_turn');
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, 'text');
  assert.ok(r.content[0].text.length > 0);
});

test('anthropic → openai: reasoning across two turns', async () => {
  const q = { role: 'user', content: 'Think about Oslo' };
  const stream = anthropic.messages.stream({
    model: 'mock-reasoner', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [q],
  });
  const first = await stream.finalMessage();
  // reasoning_content becomes a thinking block, unsigned: a Chat
  // Completions provider has no signature to give.
  assert.equal(first.content.length, 2);
  assert.equal(first.content[0].type, 'thinking');
  assert.ok(first.content[0].thinking.length > 0, 'reasoning_content was lost');
  assert.equal(first.content[1].type, 'text');
  assert.ok(first.usage.output_tokens > 0);
  priced(stream.request_id, 'mock-reasoner', first.usage);
  const { data: second, response } = await anthropic.messages.create({
    model: 'mock-reasoner', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [q, { role: 'assistant', content: first.content }, { role: 'user', content: 'And Rome?' }],
  }).withResponse();
  assert.equal(second.content[0].type, 'thinking');
  assert.match(second.content[1].text, /Rome/);
  // The unsigned thinking cannot go back to a Chat Completions provider:
  // the answer says it was left out.
  assert.equal(response.headers.get('x-air-dropped-params'), 'thinking');
  priced(second._request_id, 'mock-reasoner', second.usage);
});

test('anthropic → openai: an image', () => image('mock-gpt'));

test('anthropic → openai: 429, 5xx and a cut stream', async () => {
  const msg = (model, content) => anthropic.messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content }] });
  await fails(msg('rec-gpt2', '500'), Anthropic.InternalServerError, 500, 'api_error');
  assert.equal(await cut('rec-gpt2', 'cut'), 'Hel');
  await fails(msg('rec-gpt', '429'), Anthropic.RateLimitError, 429, 'rate_limit_error', '7');
});

for (const model of ['mock-gemini', 'mock-vertex']) {
  test(`anthropic → ${model}: thinking across two turns`, async () => {
    const q = { role: 'user', content: 'Think about Tromsø' };
    const params = { model, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 } };
    const stream = anthropic.messages.stream({ ...params, messages: [q] });
    const first = await stream.finalMessage();
    assert.equal(first.content[0].type, 'thinking');
    assert.equal(first.content[0].thinking, 'Considering: Think about Tromsø');
    // Gemini signs the part after the thought: the signature comes as a
    // thinking block of its own, before the text it signs.
    const signed = first.content.filter((b) => b.type === 'thinking' && b.signature);
    assert.equal(signed.length, 1, JSON.stringify(first.content));
    const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    assert.equal(text(first), 'Mock reply to: Think about Tromsø');
    assert.ok(first.usage.output_tokens > 0);
    priced(stream.request_id, model, first.usage);
    const second = await anthropic.messages.create({
      ...params, messages: [q, { role: 'assistant', content: first.content }, { role: 'user', content: 'And Oslo?' }],
    });
    assert.equal(second.content[0].type, 'thinking');
    assert.equal(text(second), 'Mock reply to: And Oslo?');
    priced(second._request_id, model, second.usage);
    // A forged signature is the provider's refusal, in Anthropic's shape.
    const forged = first.content.map((b) => (b.signature ? { ...b, signature: 'Zm9yZ2Vk' } : b));
    await fails(anthropic.messages.create({
      ...params, messages: [q, { role: 'assistant', content: forged }, { role: 'user', content: 'And Oslo?' }],
    }), Anthropic.BadRequestError, 400, 'invalid_request_error');
  });

  test(`anthropic → ${model}: an image`, () => image(model));

  test(`anthropic → ${model}: 5xx, cut streams and 429`, async () => {
    const errs = `${model}-errors`;
    const msg = (content) => anthropic.messages.create({ model: errs, max_tokens: 10, messages: [{ role: 'user', content }] });
    await fails(msg('mock:500'), Anthropic.InternalServerError, 500, 'api_error');
    assert.ok((await cut(errs, 'mock:cut')).startsWith('Mock'), 'the text before the cut was lost');
    assert.ok((await cut(errs, 'mock:cut-event')).startsWith('Mock'), 'the text before the cut was lost');
    await fails(msg('mock:503'), Anthropic.InternalServerError, 503, 'overloaded_error');
    // The provider's RetryInfo delay is the client's Retry-After.
    await fails(msg('mock:throttle'), Anthropic.RateLimitError, 429, 'rate_limit_error', '17');
  });
}

test('anthropic → bedrock: an image', () => image('claude-bedrock'));

test('anthropic → bedrock: 5xx and 429', async () => {
  const msg = (content) => anthropic.messages.create({ model: 'claude-bedrock-errors', max_tokens: 10, messages: [{ role: 'user', content }] });
  await fails(msg('mock:500'), Anthropic.InternalServerError, 500, 'api_error');
  await fails(msg('mock:503'), Anthropic.InternalServerError, 503, 'overloaded_error');
  await fails(msg('mock:throttle'), Anthropic.RateLimitError, 429, 'rate_limit_error', '7');
});
