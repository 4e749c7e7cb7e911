// The official npm SDKs as clients of caddy-air. Run by the Go test
// TestNodeSDKs, which starts the gateway and passes GATEWAY_URL and AIR_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
assert.ok(base && key, 'GATEWAY_URL and AIR_KEY must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });

test('openai: chat completion', async () => {
  const r = await openai.chat.completions.create({
    model: 'mock-gpt',
    messages: [{ role: 'user', content: 'Hello from node' }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.match(r.choices[0].message.content, /Hello from node/);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('openai: streaming without include_usage sees no usage chunk', async () => {
  const stream = await openai.chat.completions.create({
    model: 'mock-reasoner',
    stream: true,
    messages: [{ role: 'user', content: 'Stream please' }],
  });
  let text = '', reasoning = '', finish = null, chunks = 0, ids = new Set();
  for await (const c of stream) {
    chunks++;
    ids.add(c.id);
    assert.equal(c.usage, undefined, 'the gateway injected include_usage; the client must not see it');
    assert.ok(c.choices.length > 0, 'a usage-only chunk reached the client');
    text += c.choices[0].delta.content ?? '';
    reasoning += c.choices[0].delta.reasoning_content ?? '';
    finish = c.choices[0].finish_reason ?? finish;
  }
  assert.ok(chunks > 2);
  assert.equal(ids.size, 1);
  assert.match(text, /Stream please/);
  assert.ok(reasoning.length > 0, 'reasoning_content was lost');
  assert.equal(finish, 'stop');
});

test('openai: streaming with include_usage', async () => {
  const stream = await openai.chat.completions.create({
    model: 'mock-gpt',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Count tokens' }],
  });
  let usage = null;
  for await (const c of stream) if (c.usage) usage = c.usage;
  assert.ok(usage && usage.prompt_tokens > 0 && usage.completion_tokens > 0);
});

test('openai: tool calls', async () => {
  const r = await openai.chat.completions.create({
    model: 'mock-gpt',
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_weather');
  JSON.parse(r.choices[0].message.tool_calls[0].function.arguments);
});

test('openai: models and errors', async () => {
  const models = [];
  for await (const m of openai.models.list()) models.push(m.id);
  assert.ok(models.includes('mock-gpt'));
  const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-air-' + 'x'.repeat(43), maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key');
  await assert.rejects(
    openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(
    openai.chat.completions.create({ model: 'mock-gpt', temperature: 2, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
});

const cachedSystem = [{ type: 'text', text: 'You are a careful assistant. '.repeat(40), cache_control: { type: 'ephemeral' } }];

test('anthropic: message with prompt caching', async () => {
  const nonce = `nonce-${Date.now()}-${Math.random()}`;
  const system = [{ ...cachedSystem[0], text: cachedSystem[0].text + nonce }];
  const first = await anthropic.messages.create({
    model: 'mock-claude', max_tokens: 256, system,
    messages: [{ role: 'user', content: 'Hello Claude' }],
  });
  assert.equal(first.type, 'message');
  assert.equal(first.content[0].type, 'text');
  assert.ok(first.usage.cache_creation_input_tokens > 0, 'first call writes the cache');
  const second = await anthropic.messages.create({
    model: 'mock-claude', max_tokens: 256, system,
    messages: [{ role: 'user', content: 'Hello again' }],
  });
  assert.ok(second.usage.cache_read_input_tokens > 0, 'second call reads the cache');
});

test('anthropic: streaming', async () => {
  const stream = anthropic.messages.stream({
    model: 'mock-claude', max_tokens: 256,
    messages: [{ role: 'user', content: 'Stream to me' }],
  });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const msg = await stream.finalMessage();
  assert.equal(events[0], 'message_start');
  assert.ok(events.includes('content_block_delta'));
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(msg.content[0].text.length > 0);
  assert.ok(msg.usage.output_tokens > 0);
});

test('anthropic: errors in Anthropic shape', async () => {
  const bad = new Anthropic({ baseURL: base, apiKey: 'sk-air-' + 'y'.repeat(43), maxRetries: 0 });
  await assert.rejects(
    bad.messages.create({ model: 'mock-claude', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.type === 'error' && e.error?.error?.type === 'authentication_error');
});

test('openai: responses, JSON, streamed, continued and retrieved', async () => {
  const first = await openai.responses.create({ model: 'mock-gpt', input: 'Hello responses from node' });
  assert.equal(first.object, 'response');
  assert.equal(first.status, 'completed');
  assert.match(first.output_text, /Hello responses from node/);
  assert.ok(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);

  const stream = await openai.responses.create({
    model: 'mock-reasoner', input: 'Stream it', stream: true, previous_response_id: first.id,
  });
  const types = [];
  let text = '', done = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') done = ev.response;
  }
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.match(text, /Stream it/);
  assert.equal(done.previous_response_id, first.id);
  assert.equal(done.usage.input_tokens_details.cached_tokens, first.usage.input_tokens);
  assert.ok(done.usage.output_tokens_details.reasoning_tokens > 0);

  const got = await openai.responses.retrieve(done.id);
  assert.equal(got.id, done.id);
  assert.equal(got.output_text, text);
  await assert.rejects(openai.responses.retrieve('resp_unknown'), (e) => e.status === 404);
});

test('openai: responses to an anthropic model, streamed, with a function call and its output', async () => {
  const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
  const stream = await openai.responses.create({
    model: 'mock-claude', input: 'Weather in Oslo?', tools, stream: true,
  });
  const types = [];
  let args = '', done = null, seq = 0;
  for await (const ev of stream) {
    assert.equal(ev.sequence_number, seq++);
    types.push(ev.type);
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
    if (ev.type === 'response.completed') done = ev.response;
  }
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(types.filter((t) => t === 'response.function_call_arguments.delta').length > 1, 'arguments came in one delta');
  const call = done.output.find((it) => it.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^toolu_/);
  assert.equal(call.arguments, args);
  assert.ok(done.usage.input_tokens > 0 && done.usage.output_tokens > 0);

  const next = await openai.responses.create({
    model: 'mock-claude', tools,
    input: [{ role: 'user', content: 'Weather in Oslo?' }, ...done.output,
      { type: 'function_call_output', call_id: call.call_id, output: '12 degrees and rain' }],
  });
  assert.equal(next.status, 'completed');
  assert.ok(next.output_text.length > 0);
  await assert.rejects(openai.responses.create({ model: 'mock-claude', input: 'x', background: true }),
    (e) => e.status === 400 && e.param === 'background');
});
