// Reading files (plain or gzip, by magic number) and the per-node colour metrics.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { bytesToText } from '../src/io/read-file';
import { metricDomain, metricValue } from '../src/model/metrics';
import { parseTrace } from '../src/model/parse';
import { makeV2Trace } from './fixtures/make-fixtures';

describe('bytesToText', () => {
  const text = JSON.stringify({ format: 'minfer-trace', note: 'ünïcode ✓' });
  it('reads plain and gzip-compressed bytes alike', async () => {
    const plain = new TextEncoder().encode(text);
    const gz = gzipSync(Buffer.from(text));
    expect(await bytesToText(plain.buffer.slice(0) as ArrayBuffer)).toBe(text);
    expect(await bytesToText(gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength) as ArrayBuffer)).toBe(text);
  });
});

describe('metrics', () => {
  const t = parseTrace(makeV2Trace({ decodeSteps: 2, seed: 9, nanAt: { step: 2, node: 'blk.0.attn_v' } }), 'm.json');
  const g = t.graphs.get('decode')!;
  const id = (n: string) => g.nodes.find((x) => x.name === n)!.id;
  it('reads max |x|, mean |x|, time and NaN/Inf from the records', () => {
    const rec = t.steps[1].records.get(id('blk.1.attn_residual'))!;
    expect(metricValue('absmax', t.steps[1], rec.id, null)).toBe(Math.max(Math.abs(rec.stats!.min), Math.abs(rec.stats!.max)));
    expect(metricValue('absmean', t.steps[1], rec.id, null)).toBe(rec.stats!.absmean);
    expect(metricValue('time', t.steps[1], rec.id, null)).toBe(rec.timeUs);
    expect(metricValue('nonfinite', t.steps[2], id('blk.0.attn_v'), null)).toBe(2);
    expect(metricValue('absmax', t.steps[1], id('blk.0.kv_store'), null)).toBeNull();
  });
  it('keeps token ids out of the colour range', () => {
    const [lo, hi] = metricDomain('absmax', t, null);
    expect(lo).toBeGreaterThan(0);
    expect(hi).toBeLessThan(1000);   // token ids (~9000) would dominate it
  });
});
