// The trace model: both versions parse into one internal model, bad input is rejected with a
// message naming the field, and the v2 fixtures satisfy the shared JSON Schema.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020';
import { parseTrace, parseTraceText } from '../src/model/parse';
import { parseComparison } from '../src/model/compare';
import { makeComparison, makeV1Trace, makeV2Trace } from './fixtures/make-fixtures';

const SCHEMA = new URL('../../traces/schema/minfer-trace-v2.schema.json', import.meta.url);
const v2doc = makeV2Trace({ seed: 3, decodeSteps: 3 });
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

describe('schema', () => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const validate = ajv.compile(JSON.parse(readFileSync(SCHEMA, 'utf8')));
  it('accepts the cpu and cuda fixtures', () => {
    for (const doc of [v2doc, makeV2Trace({ backend: 'cuda', decodeSteps: 2, nanAt: { step: 1, node: 'blk.0.attn_q' } })]) {
      const ok = validate(doc);
      expect(ok, ajv.errorsText(validate.errors)).toBe(true);
    }
  });
  it('rejects a record with a misspelt stats field', () => {
    const bad = clone(v2doc) as { steps: { nodes: { stats?: Record<string, unknown> }[] }[] };
    const rec = bad.steps[0].nodes.find((n) => n.stats)!;
    rec.stats!.abs_mean = rec.stats!.absmean;
    delete rec.stats!.absmean;
    expect(validate(bad)).toBe(false);
  });
});

describe('version 2', () => {
  const t = parseTrace(clone(v2doc), 'a.json');
  it('reads graphs, steps and records', () => {
    const decode = t.graphs.get('decode')!;
    expect(t.version).toBe(2);
    expect(t.steps.length).toBe(4);
    expect(decode.nodes.length).toBe(3 + 4 * 20 + 3);
    const q = decode.nodes.find((n) => n.name === 'blk.0.attn_q')!;
    expect(q.bias).toBe('blk.0.attn_q.bias');
    expect(q.fusedFrom).toEqual(['blk.0.attn_q_bias']);
    const rope = decode.nodes.find((n) => n.name === 'blk.0.q_rope')!;
    expect(decode.consumers[q.id]).toContain(rope.id);
    const rec = t.steps[1].records.get(q.id)!;
    expect(rec.grid!.values).toBeInstanceOf(Float32Array);
    expect(rec.grid!.values.length).toBe(rec.grid!.rows * rec.grid!.cols);
    expect(rec.stats!.absmean).toBeGreaterThan(0);
    const kv = decode.nodes.find((n) => n.op === 'kv_store')!;
    expect(t.steps[1].records.get(kv.id)!.noOutput).toBe('kv_store');
    expect(t.steps[0].tokens.length).toBe(7);
    expect(t.steps[2].logits!.entropy).toBeGreaterThan(0);
    expect(t.meta.matmulPath).toBe('mmq');
  });
  it('turns null grid cells into NaN and keeps counts', () => {
    const doc = makeV2Trace({ decodeSteps: 1, nanAt: { step: 1, node: 'blk.1.ffn_down' } });
    const tr = parseTrace(doc, 'nan.json');
    const id = tr.graphs.get('decode')!.nodes.find((n) => n.name === 'blk.1.ffn_down')!.id;
    const rec = tr.steps[1].records.get(id)!;
    expect(rec.stats!.nan).toBe(1);
    expect(rec.stats!.inf).toBe(1);
    expect(Number.isNaN(rec.grid!.values[3])).toBe(true);
  });
  it('warns about an incomplete trace', () => {
    const doc = clone(v2doc) as Record<string, unknown>;
    doc.complete = false;
    expect(parseTrace(doc, 'p.json').warnings.join(' ')).toMatch(/incomplete/);
  });
});

describe('version 1 (upstream minfer)', () => {
  const doc = makeV1Trace({ seed: 3, decodeSteps: 3 });
  const t = parseTrace(doc, 'old.json');
  const decode = t.graphs.get('decode')!.nodes;
  const byName = (nodes: typeof decode, name: string) => nodes.find((n) => n.name === name)!;
  it('reads top-level model and prompt', () => {
    expect(t.version).toBe(1);
    expect(t.meta.modelFile).toBe('qwen2.5-0.5b-instruct-q8_0.gguf');
    expect(t.meta.prompt).toBe(doc.prompt);
    expect(t.steps.length).toBe(4);
    expect([...t.graphs.keys()]).toEqual(['prefill', 'decode']);
  });
  it('takes the layer from meta.layer and the weight from meta.weight / meta.wtype', () => {
    const q = byName(decode, 'matmul_blk.2.attn_q.weight');
    expect(q.layer).toBe(2);
    expect(q.weight).toBe('blk.2.attn_q.weight');
    expect(q.weightType).toBe('Q8_0');
    expect(t.meta.weightTypes.ffn_down).toBe('Q6_K');
    // a node without the layer in its name still lands in its layer row
    const resid = decode.find((n) => n.op === 'add' && n.layer === 1);
    expect(resid).toBeDefined();
    expect(resid!.name).toMatch(/^add_\d+$/);
  });
  it('turns ggml-order shapes into tokens × features', () => {
    const prefill = t.graphs.get('prefill')!;
    expect(prefill.nTokens).toBe(7);
    expect(byName(prefill.nodes, 'matmul_blk.0.attn_q.weight').shape).toEqual([7, 64]);
    expect(byName(prefill.nodes, 'token_ids').shape).toEqual([7, 1]);
    expect(byName(decode, 'matmul_blk.0.attn_q.weight').shape).toEqual([1, 64]);
    expect(decode[decode.length - 1].shape).toEqual([1, 151936]);
  });
  it('reads logits_top as [token_id, prob] pairs and aligns tokens: a step\'s token is its input', () => {
    const s1 = t.steps[1], s2 = t.steps[2];
    expect(s1.tokens[0].id).toBe(doc.phases[1].steps[0].token);
    expect(s1.logits!.top[0].p).toBe(doc.phases[1].steps[0].logits_top[0][1]);
    // what step 1 produced is step 2's input
    expect(s1.logits!.chosen).toBe(s2.tokens[0].id);
    expect(s1.logits!.chosenText).toBe(s2.tokens[0].text);
    // the prefill has no input token in v1; what it produced is decode step 1's input
    expect(t.steps[0].tokens).toEqual([]);
    expect(t.steps[0].logits!.chosen).toBe(s1.tokens[0].id);
    // the last step's output is not in the file
    expect(t.steps[3].logits!.chosen).toBeNull();
    // top-k entries carry no text: #id until a vocabulary fills them in
    expect(t.steps[3].logits!.top.some((x) => /^#\d+$/.test(x.text))).toBe(true);
  });
  it('builds grids from strided samples', () => {
    const q = byName(decode, 'matmul_blk.2.attn_q.weight');
    const rec = t.steps[2].records.get(q.id)!;
    expect(rec.grid!.flattened).toBe(false);   // stride divides the width: an exact grid
    // ffn_up: 64 samples at stride 2 of a 176-wide row do not tile it, so they stay flattened
    expect(t.steps[2].records.get(byName(decode, 'matmul_blk.2.ffn_up.weight').id)!.grid!.flattened).toBe(true);
    expect(rec.hist!.derived).toBe(true);
    expect(rec.hist!.counts.reduce((a, b) => a + b, 0)).toBe(rec.grid!.values.length);
    // the fused-away silu has no record
    expect(t.steps[2].records.has(decode.find((n) => n.op === 'silu')!.id)).toBe(false);
  });
  it('agrees with version 2 of the same run', () => {
    const v2 = parseTrace(makeV2Trace({ seed: 3, decodeSteps: 3, gridRows: 64 }), 'b.json');
    const id = v2.graphs.get('decode')!.nodes.find((n) => n.name === 'blk.1.attn_residual')!.id;
    expect(t.steps[3].records.get(id)!.stats!.absmean).toBe(v2.steps[3].records.get(id)!.stats!.absmean);
    expect(Array.from(t.steps[3].records.get(id)!.grid!.values)).toEqual(Array.from(v2.steps[3].records.get(id)!.grid!.values));
    expect(t.steps[3].tokens[0].id).toBe(v2.steps[3].tokens[0].id);
  });
  it('names the field of a malformed pair', () => {
    const bad = JSON.parse(JSON.stringify(doc));
    bad.phases[1].steps[0].logits_top[0] = [5];
    expect(() => parseTrace(bad, 'x.json')).toThrow(/phases\[1\]\.steps\[0\]\.logits_top\[0\]: expected \[token_id, prob\]/);
  });
});

describe('malformed input', () => {
  const reject = (text: string, pattern: RegExp) => expect(() => parseTraceText(text, 'bad.json')).toThrow(pattern);
  it('names the problem', () => {
    reject('', /bad\.json: the file is empty/);
    reject(JSON.stringify(v2doc).slice(0, 3000), /not valid JSON.*truncated/);
    reject('{"format":"other","version":2}', /format: expected "minfer-trace"/);
    reject('{"format":"minfer-trace","version":7}', /unsupported version 7/);
    reject('[1,2]', /expected an object, got an array/);
    reject('{"format":"minfer-trace","version":1,"phases":[]}', /phases: no phases/);
  });
  it('names the JSON path of a bad field', () => {
    const doc = clone(v2doc) as { steps: { nodes: { id: number; grid?: { values: unknown[] } }[] }[]; graphs: unknown[] };
    doc.steps[1].nodes[5].id = 9999;
    expect(() => parseTrace(doc, 'x.json')).toThrow(/steps\[1\]\.nodes\[5\]\.id: node 9999 is not in graph "decode"/);
    const doc2 = clone(v2doc) as typeof doc;
    const rec = doc2.steps[0].nodes.find((n) => n.grid)!;
    rec.grid!.values.pop();
    expect(() => parseTrace(doc2, 'x.json')).toThrow(/grid\.values: expected \d+ values, got \d+/);
    const doc3 = clone(v2doc) as typeof doc;
    doc3.graphs = [];
    expect(() => parseTrace(doc3, 'x.json')).toThrow(/graphs: no graphs/);
  });
  it('reports a server error body', () => {
    expect(() => parseTrace({ error: 'no such trace' }, '/api/traces/x')).toThrow(/no such trace/);
  });
});

describe('comparison', () => {
  const a = makeV2Trace({ decodeSteps: 2 }), b = makeV2Trace({ decodeSteps: 2, matmulPath: 'f16', noise: 0.02 });
  const cmp = parseComparison(makeComparison(a, b, ['a.json', 'b.json']), 'cmp');
  it('finds the first divergent node and per-step agreement', () => {
    expect(cmp.firstDivergent).not.toBeNull();
    expect(cmp.steps.length).toBe(3);
    const f = cmp.firstDivergent!;
    const n = cmp.steps[f.step].nodes.get(f.node)!;
    expect(n.sqnrDb!).toBeLessThan(cmp.threshold.value);
    for (const m of cmp.steps[f.step].nodes.values())   // nothing earlier passed the threshold
      if (m.id < f.node) expect(m.sqnrDb!).toBeGreaterThanOrEqual(cmp.threshold.value);
    expect(cmp.opTimes.length).toBeGreaterThan(3);
  });
  it('treats identical grids as infinite SQNR', () => {
    const same = parseComparison(makeComparison(a, a, ['a.json', 'a.json']), 'same');
    expect(same.firstDivergent).toBeNull();
    expect([...same.steps[1].nodes.values()].every((n) => n.sqnrDb === Infinity)).toBe(true);
  });
});
