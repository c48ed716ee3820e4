// Graph layout: rows by layer, dependency ranks inside a row, fused-away nodes hidden, and a
// layout shared by the prefill and decode graphs (so a step change never re-lays out).
import { describe, expect, it } from 'vitest';
import { graphSignature, layoutGraph, NODE_W, RANK_W } from '../src/model/layout';
import { nodePath } from '../src/model/graph-index';
import { parseTrace } from '../src/model/parse';
import { makeV2Trace } from './fixtures/make-fixtures';

const trace = parseTrace(makeV2Trace({ layers: 3, decodeSteps: 1, seed: 5 }), 't.json');
const prefill = trace.graphs.get('prefill')!, decode = trace.graphs.get('decode')!;
const layout = layoutGraph(decode);
const id = (name: string) => decode.nodes.find((n) => n.name === name)!.id;

describe('layout', () => {
  it('has one row per layer between the input and output rows', () => {
    expect(layout.rows.map((r) => r.key)).toEqual(['head', 'L0', 'L1', 'L2', 'tail']);
    expect(layout.rows[1].nodes).toContain(id('blk.0.attn_q'));
    expect(layout.rows[4].nodes).toEqual([id('last_row'), id('result_norm'), id('logits')]);
  });
  it('hides fused-away nodes', () => {
    expect(layout.pos.has(id('blk.0.attn_q_bias'))).toBe(false);
    expect(layout.pos.has(id('blk.1.ffn_silu'))).toBe(false);
    expect(layout.pos.has(id('blk.1.ffn_swiglu'))).toBe(true);
  });
  it('ranks a node right of everything it reads in its row', () => {
    for (const e of layout.edges) expect(layout.pos.get(e.to)!.x).toBeGreaterThan(layout.pos.get(e.from)!.x);
    const q = layout.pos.get(id('blk.1.attn_q'))!, k = layout.pos.get(id('blk.1.attn_k'))!;
    expect(q.x).toBe(k.x);                           // q, k, v side by side in one rank
    expect(q.y).not.toBe(k.y);
    expect(layout.pos.get(id('blk.1.ffn_residual'))!.rank).toBe(11);
    expect(layout.width).toBeGreaterThanOrEqual(11 * RANK_W + NODE_W);
  });
  it('feeds each layer from the residual stream of the previous one', () => {
    expect(layout.spineIn).toContain(id('blk.1.attn_norm'));
    expect(layout.spineIn).toContain(id('blk.1.attn_residual'));
    expect(layout.spineOut).toContain(id('blk.0.ffn_residual'));
  });
  it('is shared by the prefill and decode graphs', () => {
    expect(graphSignature(prefill)).toBe(graphSignature(decode));
    expect(layoutGraph(prefill).pos.get(id('blk.2.attn'))).toEqual(layout.pos.get(id('blk.2.attn')));
  });
  it('sorts nodes into the filter paths', () => {
    expect(nodePath(decode.nodes[id('blk.0.q_rope')])).toBe('attention');
    expect(nodePath(decode.nodes[id('blk.0.kv_store')])).toBe('kv');
    expect(nodePath(decode.nodes[id('blk.0.ffn_down')])).toBe('ffn');
    expect(nodePath(decode.nodes[id('logits')])).toBe('other');
  });
});

// Issue 31, item 7: a valid 200,000-node graph threw "Maximum call stack size exceeded" (a
// spread of one value per rank into Math.max).
describe('layout of a very large graph', () => {
  it('lays out a 200,000-node chain without spreading it into an argument list', () => {
    const n = 200000;
    const nodes = Array.from({ length: n }, (_, i) => ({
      id: i, name: `blk.0.n${i}`, op: 'add', shape: [1, 8], dtype: 'f32', src: i ? [i - 1] : [], layer: 0,
      weight: null, weightType: null, bias: null, fusedFrom: [], fusedInto: -1, hasOutput: true,
    }));
    const g = { id: 'decode', phase: 'decode', nTokens: 1, fused: false, nodes, consumers: [] };
    const big = layoutGraph(g);
    expect(big.rows).toHaveLength(1);
    expect(big.pos.get(n - 1)!.rank).toBe(n - 1);
    expect(big.edges).toHaveLength(n - 1);
  });
});
