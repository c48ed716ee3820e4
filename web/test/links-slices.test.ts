import { describe, expect, it } from 'vitest';
import { layerFromName, shortName } from '../src/model/graph-index';
import { parseTrace } from '../src/model/parse';
import { fillStepSlice } from '../src/model/parse-v2';
import { ggmlToRowsCols } from '../src/model/parse-v1';
import type { GraphNode } from '../src/model/types';
import { readLiveRun, readUrl, urlSearch } from '../src/url-state';
import { makeV2Trace } from './fixtures/make-fixtures';

describe('deep links', () => {
  it('round-trips trace, step, node and view', () => {
    const s = { trace: 'a b.json.gz', a: null, b: null, step: 12, node: 'blk.3.ffn_down', view: 'pipeline' as const };
    expect(readUrl(urlSearch(s))).toEqual(s);
    expect(readUrl('?a=x.json&b=y.json&step=2')).toMatchObject({ a: 'x.json', b: 'y.json', step: 2, node: null, view: null });
    expect(readUrl('?trace=t.json&step=-1&view=bogus')).toMatchObject({ step: null, view: null });
  });
  it('names a live run by its id', () => {
    expect(readLiveRun('?live=12')).toBe(12);
    expect(readLiveRun('?live=x')).toBeNull();
    expect(readLiveRun('?trace=a.json')).toBeNull();
  });
});

describe('upstream names and shapes', () => {
  const node = (name: string) => ({ name } as GraphNode);
  it('finds the layer anywhere in the name and shortens it', () => {
    expect(layerFromName('matmul_blk.12.attn_q.weight')).toBe(12);
    expect(layerFromName('blk.3.attn_q')).toBe(3);
    expect(layerFromName('output_norm')).toBe(-1);
    expect(layerFromName('xblk.3.q')).toBe(-1);
    expect(shortName(node('matmul_blk.12.attn_q.weight'))).toBe('matmul_attn_q');
    expect(shortName(node('blk.3.ffn_down'))).toBe('ffn_down');
  });
  it('turns ggml order into tokens × features', () => {
    expect(ggmlToRowsCols([896, 2, 1, 1], 2)).toEqual([2, 896]);
    expect(ggmlToRowsCols([64, 14, 2, 1], 2)).toEqual([2, 896]);
    expect(ggmlToRowsCols([896, 1, 1, 1], 1)).toEqual([1, 896]);
    expect(ggmlToRowsCols([64, 14, 1, 1], 1)).toEqual([1, 896]);
    expect(ggmlToRowsCols([2, 1, 1, 1], 2)).toEqual([2, 1]);
    expect(ggmlToRowsCols([151936, 1, 1, 1], 7)).toEqual([1, 151936]);
  });
});

describe('per-step slices', () => {
  it('an index with null nodes parses; a slice fills the step', () => {
    const doc = makeV2Trace({ decodeSteps: 2 });
    const full = parseTrace(JSON.parse(JSON.stringify(doc)), 'full.json');
    const index = JSON.parse(JSON.stringify(doc));
    const slices = index.steps.map((s: { nodes: unknown; kernels: unknown }, k: number) => {
      const slice = { step: k, nodes: s.nodes, kernels: s.kernels };
      s.nodes = null; s.kernels = null;
      return slice;
    });
    const t = parseTrace(index, 'sliced.json');
    expect(t.steps.every((s) => s.pending && s.records.size === 0)).toBe(true);
    expect(t.steps[1].logits!.chosen).toBe(full.steps[1].logits!.chosen);
    expect(fillStepSlice(t, slices[1], 'slice')).toBe(1);
    expect(t.steps[1].pending).toBe(false);
    expect(t.steps[1].records.size).toBe(full.steps[1].records.size);
    const id = [...full.steps[1].records.keys()][5];
    expect(t.steps[1].records.get(id)).toEqual(full.steps[1].records.get(id));
    expect(() => fillStepSlice(t, { step: 9, nodes: [] }, 's')).toThrow(/step 9 is not in the trace/);
  });
});
