// The official npm `openai` SDK on the audio and moderation endpoints:
// speech to a file that decodes as WAV, a transcription of a file of
// several MiB, a moderation, and bad input. Run by the Go test
// TestNodeSDKAudio, which then checks the ledger records these calls left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';

const base = process.env.GATEWAY_URL;
const key = process.env.AIR_KEY;
assert.ok(base && key, 'GATEWAY_URL and AIR_KEY must be set');

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });

// wav returns a WAV file of ms milliseconds of 16 kHz 16-bit mono audio.
function wav(ms) {
  const data = ms * 32;
  const b = Buffer.alloc(44 + data);
  b.write('RIFF', 0); b.writeUInt32LE(36 + data, 4); b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22);
  b.writeUInt32LE(16000, 24); b.writeUInt32LE(32000, 28); b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34);
  b.write('data', 36); b.writeUInt32LE(data, 40);
  for (let i = 44; i < b.length; i += 2) b.writeInt16LE((i * 7) % 30000, i);
  return b;
}

test('openai: audio.speech.create to a WAV file', async () => {
  const res = await openai.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'Twelve chars', response_format: 'wav' });
  const audio = Buffer.from(await res.arrayBuffer());
  assert.equal(audio.toString('ascii', 0, 4), 'RIFF');
  assert.equal(audio.toString('ascii', 8, 12), 'WAVE');
  assert.equal(audio.readUInt16LE(20), 1, 'PCM');
  assert.equal(audio.readUInt32LE(4), audio.length - 8);
  assert.equal(audio.readUInt32LE(40), audio.length - 44);
  // 12 characters at 50 ms each, 24 kHz 16-bit mono.
  assert.equal((audio.length - 44) / 2 / audio.readUInt32LE(24), 0.6);
});

test('openai: audio.speech.create refuses a format the model lacks', async () => {
  await assert.rejects(openai.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'x', response_format: 'flac' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format');
});

test('openai: audio.transcriptions.create of a 4 MiB file', async () => {
  const file = await toFile(wav(131_072), 'talk.wav', { type: 'audio/wav' });
  const t = await openai.audio.transcriptions.create({ model: 'whisper-1', file });
  assert.match(t.text, /131072 milliseconds/);
  assert.equal(t.usage.type, 'duration');
});

test('openai: moderations.create', async () => {
  const m = await openai.moderations.create({ model: 'omni-moderation-latest', input: ['we will kill the bug', 'fine'] });
  assert.equal(m.results.length, 2);
  assert.equal(m.results[0].flagged, true);
  assert.equal(m.results[0].categories.violence, true);
  assert.equal(m.results[1].flagged, false);
});
