// The original framework's side of bench/mastra_peer.py: Mastra agents driven by a mock model, offline.
//
//   node bench.mjs --text FILE [--chunk-size 20] [--repeat 5] [--calls 300]
//
// FILE holds the answer text; the mock model streams it in --chunk-size pieces (the same pieces procflow's
// ScriptedModel streams). Prints one JSON object on stdout: per-run seconds (median, spread) for
//   stream.bare      agent.stream() with no processors
//   stream.trivial   one output processor whose processOutputStream returns the part unchanged
//   stream.regex     RegexFilterProcessor({presets: ['pii', 'secrets', 'urls'], strategy: 'redact'})
// and per-call seconds for agent.generate() with no processors (input.bare) and with 10 trivial input
// processors (input.chain10), plus sanity checks that the stream really carried (and redacted) the text.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { Agent } from '@mastra/core/agent';
import { RegexFilterProcessor } from '@mastra/core/processors';
import { MockLanguageModelV2 } from 'ai/test';

const { values: opts } = parseArgs({
  options: {
    text: { type: 'string' },
    'chunk-size': { type: 'string', default: '20' },
    repeat: { type: 'string', default: '5' },
    calls: { type: 'string', default: '300' },
  },
});
if (!opts.text) {
  console.error('usage: node bench.mjs --text FILE [--chunk-size 20] [--repeat 5] [--calls 300]');
  process.exit(2);
}
const TEXT = readFileSync(opts.text, 'utf8');
const CHUNK_SIZE = Number(opts['chunk-size']);
const REPEAT = Number(opts.repeat);
const CALLS = Number(opts.calls);

const USAGE = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

/** The model's stream parts (LanguageModelV2 spec) for one answer, text cut into fixed-size pieces. */
function answerParts(text, size) {
  const parts = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'text-0' },
  ];
  for (let at = 0; at < text.length; at += size) {
    parts.push({ type: 'text-delta', id: 'text-0', delta: text.slice(at, at + size) });
  }
  parts.push({ type: 'text-end', id: 'text-0' });
  parts.push({ type: 'finish', finishReason: 'stop', usage: USAGE });
  return parts;
}

/** A mock model that answers every call with `text`, one stream part per pull. */
function mockModel(text) {
  const parts = answerParts(text, CHUNK_SIZE);
  return new MockLanguageModelV2({
    doStream: async () => {
      let next = 0;
      const stream = new ReadableStream({
        pull(controller) {
          if (next < parts.length) controller.enqueue(parts[next++]);
          else controller.close();
        },
      });
      return { stream };
    },
    doGenerate: async () => ({
      content: [{ type: 'text', text }],
      finishReason: 'stop',
      usage: USAGE,
      warnings: [],
    }),
  });
}

function makeAgent(text, { inputProcessors = [], outputProcessors = [] } = {}) {
  return new Agent({
    id: 'bench',
    name: 'bench',
    instructions: 'You are a benchmark.',
    model: mockModel(text),
    inputProcessors,
    outputProcessors,
  });
}

/** Seconds for one agent.stream() consumed to the end; the streamed text when `collect`. */
async function streamOnce(makeProcessors, collect = false) {
  const agent = makeAgent(TEXT, { outputProcessors: makeProcessors() });
  const start = performance.now();
  const output = await agent.stream('go');
  let text = '';
  let chunks = 0;
  for await (const chunk of output.fullStream) {
    chunks += 1;
    if (collect && chunk.type === 'text-delta') text += chunk.payload.text;
  }
  return { seconds: (performance.now() - start) / 1000, chunks, text };
}

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const spread = median ? (sorted[sorted.length - 1] - sorted[0]) / median : 0;
  return { median, spread, samples: samples.length };
}

/** Median seconds per stream for each processor set; the sets take turns, so drift hits all alike. */
async function streamMedians(sets) {
  for (const make of Object.values(sets)) await streamOnce(make); // warm-up: JIT, pattern compilation
  const samples = Object.fromEntries(Object.keys(sets).map((name) => [name, []]));
  for (let r = 0; r < REPEAT; r += 1) {
    for (const [name, make] of Object.entries(sets)) samples[name].push((await streamOnce(make)).seconds);
  }
  return Object.fromEntries(Object.entries(samples).map(([name, times]) => [name, summary(times)]));
}

/** Per-call seconds of agent.generate() for each input processor set, `CALLS` calls per repetition. */
async function generateMedians(sets) {
  const agents = Object.entries(sets).map(([name, inputProcessors]) => [
    name,
    makeAgent('ok', { inputProcessors }),
  ]);
  for (const [, agent] of agents) {
    const first = await agent.generate('go');
    if (first.text !== 'ok') throw new Error(`unexpected answer from the mock model: ${first.text}`);
    for (let i = 0; i < Math.max(1, Math.floor(CALLS / 10)); i += 1) await agent.generate('go');
  }
  const samples = Object.fromEntries(agents.map(([name]) => [name, []]));
  for (let r = 0; r < REPEAT; r += 1) {
    for (const [name, agent] of agents) {
      const start = performance.now();
      for (let i = 0; i < CALLS; i += 1) await agent.generate('go');
      samples[name].push((performance.now() - start) / 1000 / CALLS);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, times]) => [name, summary(times)]));
}

const none = () => [];
const trivialOutput = () => [{ id: 'pass-through', processOutputStream: async ({ part }) => part }];
const regex = () => [new RegexFilterProcessor({ presets: ['pii', 'secrets', 'urls'], strategy: 'redact' })];
const trivialInputs = Array.from({ length: 10 }, (_, i) => ({
  id: `trivial-${i}`,
  processInput: async ({ messages }) => messages,
}));

const bareRun = await streamOnce(none, true);
const regexRun = await streamOnce(regex, true);
const checks = {
  bare_text_matches: bareRun.text === TEXT,
  redacted: !/@example\.com/.test(regexRun.text) && regexRun.text.includes('[EMAIL]'),
  bare_chunks: bareRun.chunks,
};

const result = {
  mastra: createRequire(import.meta.url)('@mastra/core/package.json').version,
  node: process.version,
  text_chars: TEXT.length,
  model_chunks: Math.ceil(TEXT.length / CHUNK_SIZE),
  checks,
  stream: await streamMedians({ bare: none, trivial: trivialOutput, regex }),
  input: await generateMedians({ bare: [], chain10: trivialInputs }),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
