// The official npm SDKs against cloud providers through caddy-air: the
// Anthropic SDK against a bedrock model (a fake Bedrock that checks SigV4
// signatures and streams AWS's binary event stream), the OpenAI SDK
// against an azure model (a fake Azure OpenAI resource). Run by the Go
// test TestNodeSDKBedrockAzure, which starts the gateway and passes
// GATEWAY_URL and AIR_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
assert.ok(base && key, 'GATEWAY_URL and AIR_KEY must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};

test('anthropic → bedrock: a message, its cached system prompt written then read', async () => {
  const system = [{ type: 'text', text: 'Node facts about fjords. '.repeat(20), cache_control: { type: 'ephemeral' } }];
  const first = await anthropic.messages.create({
    model: 'claude-bedrock', max_tokens: 256, system,
    messages: [{ role: 'user', content: 'Hello from node' }],
  });
  assert.equal(first.type, 'message');
  assert.equal(first.content[0].text, 'Mock reply to: Hello from node');
  assert.equal(first.stop_reason, 'end_turn');
  assert.ok(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);
  assert.ok(first.usage.cache_creation_input_tokens > 0, 'no cache write reported');
  const second = await anthropic.messages.create({
    model: 'claude-bedrock', max_tokens: 256, system,
    messages: [{ role: 'user', content: 'Hello again' }],
  });
  assert.equal(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens);
});

test('anthropic → bedrock: a streamed tool call, then its result', async () => {
  const q = { role: 'user', content: 'Weather in Bergen?' };
  const stream = anthropic.messages.stream({ model: 'claude-bedrock', max_tokens: 256, tools: [weather], messages: [q] });
  let deltas = 0;
  stream.on('inputJson', () => deltas++);
  const m = await stream.finalMessage();
  assert.equal(m.stop_reason, 'tool_use');
  const call = m.content.find((b) => b.type === 'tool_use');
  assert.ok(call && call.name === 'get_weather' && call.id.startsWith('tooluse_'));
  assert.deepEqual(call.input, { query: 'Weather in Bergen?' });
  assert.ok(deltas >= 4, `the arguments came in ${deltas} deltas`);
  const r = await anthropic.messages.create({
    model: 'claude-bedrock', max_tokens: 256, tools: [weather],
    messages: [q, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '9 degrees' }] }],
  });
  assert.equal(r.content[0].text, 'Tool result: 9 degrees');
});

test('anthropic → bedrock: thinking across two turns', async () => {
  const q = { role: 'user', content: 'Think about Tromsø' };
  const first = await anthropic.messages.stream({
    model: 'claude-bedrock', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [q],
  }).finalMessage();
  assert.equal(first.content[0].type, 'thinking');
  assert.ok(first.content[0].signature.startsWith('sig-'));
  const second = await anthropic.messages.create({
    model: 'claude-bedrock', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [q, { role: 'assistant', content: first.content }, { role: 'user', content: 'And Oslo?' }],
  });
  assert.equal(second.content[1].text, 'Mock reply to: And Oslo?');
});

test('anthropic → bedrock: a cut stream is an error', async () => {
  const stream = anthropic.messages.stream({
    model: 'claude-bedrock', max_tokens: 100, messages: [{ role: 'user', content: 'mock:cut-frame' }],
  });
  await assert.rejects(stream.finalMessage());
});

test('openai → azure: a completion on the deployment path and a stream on the v1 path', async () => {
  const r = await openai.chat.completions.create({
    model: 'gpt-azure', messages: [{ role: 'user', content: 'Hello Azure from node' }],
  });
  assert.match(r.choices[0].message.content, /Hello Azure from node/);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.usage.prompt_tokens > 0);
  const stream = await openai.chat.completions.create({
    model: 'gpt-azure-v1', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Stream from Azure' }],
  });
  let text = '', usage = null;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content ?? '';
    if (c.usage) usage = c.usage;
  }
  assert.match(text, /Stream from Azure/);
  assert.ok(usage && usage.completion_tokens > 0);
});

test('openai → azure: a streamed tool call, then its result', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: weather.input_schema } }];
  const q = { role: 'user', content: 'Weather in Bergen?' };
  const stream = await openai.chat.completions.create({ model: 'gpt-azure', stream: true, tools, messages: [q] });
  let args = '', id = '', deltas = 0, finish = null;
  for await (const c of stream) {
    const tc = c.choices[0]?.delta?.tool_calls?.[0];
    if (tc?.id) id = tc.id;
    if (tc?.function?.arguments) { args += tc.function.arguments; deltas++; }
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'tool_calls');
  assert.ok(deltas >= 2 && JSON.parse(args));
  const r = await openai.chat.completions.create({
    model: 'gpt-azure', tools,
    messages: [q, { role: 'assistant', tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
      { role: 'tool', tool_call_id: id, content: '9 degrees' }],
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('openai responses → bedrock: a streamed answer', async () => {
  const stream = await openai.responses.create({
    model: 'claude-bedrock', stream: true, instructions: 'Be terse.', input: 'Stream a Responses answer from node',
  });
  let text = '', final = null, seq = 0;
  for await (const ev of stream) {
    assert.equal(ev.sequence_number, seq++);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') final = ev.response;
  }
  assert.equal(text, 'Mock reply to: Stream a Responses answer from node');
  assert.ok(final, 'no response.completed event');
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text ?? final.output.find((o) => o.type === 'message').content[0].text, text);
  assert.ok(final.usage.input_tokens > 0 && final.usage.output_tokens > 0);
});
