// The official npm SDKs against Gemini models: mock-gemini (protocol
// gemini) and mock-vertex (protocol vertex), both served by the gateway's
// own mock provider. Run by the Go test TestNodeSDKs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
assert.ok(base && key, 'GATEWAY_URL and AIR_KEY must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
const weather = { name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };

for (const model of ['mock-gemini', 'mock-vertex']) {
  test(`anthropic → ${model}: message, stream, tool call and result`, async () => {
    const m = await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello from node' }] });
    assert.equal(m.type, 'message');
    assert.equal(m.content[0].text, 'Mock reply to: Hello from node');
    assert.equal(m.stop_reason, 'end_turn');
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);

    const stream = anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Stream to me, Gemini' }] });
    const events = [];
    stream.on('streamEvent', (e) => events.push(e.type));
    const s = await stream.finalMessage();
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.filter((e) => e === 'content_block_delta').length > 2);
    assert.equal(s.content[0].text, 'Mock reply to: Stream to me, Gemini');
    assert.ok(s.usage.input_tokens > 0 && s.usage.output_tokens > 0, 'the last chunk\'s usage was lost');

    const q = { role: 'user', content: 'Weather in Oslo?' };
    const call = await anthropic.messages.stream({ model, max_tokens: 256, tools: [weather], messages: [q] }).finalMessage();
    assert.equal(call.stop_reason, 'tool_use');
    const use = call.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.equal(use.input.query, 'Weather in Oslo?');
    const after = await anthropic.messages.create({
      model, max_tokens: 256, tools: [weather],
      messages: [q, { role: 'assistant', content: call.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'rain, 12 degrees' }] }],
    });
    assert.match(after.content.at(-1).text, /Tool result: .*rain, 12 degrees/);
  });

  test(`openai → ${model}: completion, stream with usage, tool call, errors`, async () => {
    const r = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello from node' }] });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.content, 'Mock reply to: Hello from node');
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);

    const stream = await openai.chat.completions.create({
      model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Stream to me, Gemini' }],
    });
    let text = '', usage = null, finish = null;
    for await (const c of stream) {
      if (c.usage) usage = c.usage;
      if (c.choices.length > 0) {
        text += c.choices[0].delta.content ?? '';
        finish = c.choices[0].finish_reason ?? finish;
      }
    }
    assert.equal(text, 'Mock reply to: Stream to me, Gemini');
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.prompt_tokens > 0 && usage.completion_tokens > 0, 'the last chunk\'s usage was lost');

    const t = await openai.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: weather.input_schema } }],
    });
    assert.equal(t.choices[0].finish_reason, 'tool_calls');
    assert.equal(JSON.parse(t.choices[0].message.tool_calls[0].function.arguments).query, 'Weather in Paris?');

    await assert.rejects(
      openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'mock:500' }] }),
      (e) => e instanceof OpenAI.InternalServerError && e.status === 500);
  });
}
