// A version-1 trace in the real upstream layout (fixtures/make-upstream-v1.ts): layers found as
// upstream's page finds them, the prefill's token count, and the views' models built on them.
import { describe, expect, it } from 'vitest';
import { findNodeByKey, nodeKey, nodePath } from '../src/model/graph-index';
import { layoutGraph } from '../src/model/layout';
import { parseTrace } from '../src/model/parse';
import { LAYER_STAGES, buildPipeline, summarizeStage } from '../src/model/pipeline';
import type { GraphNode } from '../src/model/types';
import { makeUpstreamV1Trace } from './fixtures/make-upstream-v1';

const LAYERS = 24;
const doc = makeUpstreamV1Trace({ layers: LAYERS, decodeSteps: 3 });
const trace = parseTrace(doc, 'upstream.json');
const prefill = trace.graphs.get('prefill')!;
const decode = trace.graphs.get('decode')!;
const layersOf = (nodes: GraphNode[], name: string) => nodes.filter((n) => n.name === name).map((n) => n.layer);
const perLayer = (k: number) => Array.from({ length: LAYERS }, (_, l) => Array(k).fill(l)).flat();

describe('upstream version 1: the layer of every node', () => {
  it('gives the repeated rms_norm / add / rope their layer, the final norm none', () => {
    for (const g of [prefill, decode]) {
      expect(layersOf(g.nodes, 'rms_norm')).toEqual([...perLayer(2), -1]);
      expect(layersOf(g.nodes, 'add')).toEqual(perLayer(2));   // residual adds join their layer
      expect(layersOf(g.nodes, 'rope')).toEqual(perLayer(2));
    }
    expect(layersOf(prefill.nodes, 'silu')).toEqual(perLayer(1));
  });
  it('reads the KV-cache nodes\' detail.layer (kvcache_load has no sources) and attn\'s meta.layer', () => {
    expect(layersOf(decode.nodes, 'kvcache_load')).toEqual(perLayer(1));
    expect(decode.nodes.filter((n) => n.name === 'kvcache_load').every((n) => n.src.length === 0)).toBe(true);
    expect(layersOf(decode.nodes, 'kvcache_store')).toEqual(perLayer(1));
    expect(layersOf(decode.nodes, 'attn')).toEqual(perLayer(1));
  });
  it('finds the layer of the decode graph\'s fused nodes in the weights their detail names', () => {
    expect(layersOf(decode.nodes, 'fused_qkv')).toEqual(perLayer(1));
    expect(layersOf(decode.nodes, 'fused_ffn')).toEqual(perLayer(1));
    const path = (name: string) => nodePath(decode.nodes.find((n) => n.name === name)!);
    expect([path('fused_qkv'), path('fused_ffn'), path('kvcache_load')]).toEqual(['attention', 'ffn', 'kv']);
  });
  it('keeps the embedding, the final norm and the LM head outside the blocks', () => {
    const outside = decode.nodes.filter((n) => n.layer < 0).map((n) => n.name);
    expect(outside).toEqual(['token_ids', 'pos', 'get_rows_token_embd.weight', 'rms_norm', 'matmul_output.weight']);
  });
  it('reads the weight, its bias and its type from meta', () => {
    const q = prefill.nodes.find((n) => n.name === 'matmul_blk.5.attn_q.weight')!;
    expect([q.layer, q.weight, q.bias, q.weightType]).toEqual([5, 'blk.5.attn_q.weight', 'blk.5.attn_q.bias', 'q8_0']);
  });
  it('puts a norm that names no weight in the layer whose projections it feeds', () => {
    const bare = structuredClone(doc);
    for (const p of bare.phases) for (const n of p.graph.nodes) if (n.op === 'rms_norm' && /blk/.test(String(n.meta.weight))) n.meta = {};
    const g = parseTrace(bare, 'bare.json').graphs.get('decode')!;
    expect(layersOf(g.nodes, 'rms_norm')).toEqual([...perLayer(2), -1]);
  });
});

describe('upstream version 1: token count and shapes', () => {
  it('takes the prefill\'s token count from token_ids\' shape [1, n_tokens]', () => {
    expect(prefill.nTokens).toBe(7);
    expect(decode.nTokens).toBe(1);
    expect(prefill.nodes.find((n) => n.name === 'matmul_blk.0.attn_q.weight')!.shape).toEqual([7, 896]);
    expect(prefill.nodes.find((n) => n.name === 'token_ids')!.shape).toEqual([7, 1]);
    expect(decode.nodes.find((n) => n.name === 'fused_qkv')!.shape).toEqual([1, 1152]);
  });
  it('has a step per phase step, the input tokens in order', () => {
    expect(trace.steps.map((s) => s.graphId)).toEqual(['prefill', 'decode', 'decode', 'decode']);
    expect(trace.steps.slice(1).map((s) => s.tokens[0].text)).toEqual([' is', ' Q', 'wen']);
    expect(trace.steps[0].records.get(prefill.nodes.find((n) => n.name === 'rms_norm')!.id)!.grid).not.toBeNull();
  });
});

describe('upstream version 1: the views\' models', () => {
  it('names a node with a repeated name in deep links by its occurrence, the same node in both graphs', () => {
    const fourthNorm = decode.nodes.filter((n) => n.name === 'rms_norm')[3];
    expect(nodeKey(decode, fourthNorm.id)).toBe('rms_norm~3');
    const inPrefill = prefill.nodes[findNodeByKey(prefill, 'rms_norm~3')];
    expect([inPrefill.name, inPrefill.layer, inPrefill.weight]).toEqual(['rms_norm', 1, 'blk.1.ffn_norm.weight']);
    const q = prefill.nodes.find((n) => n.name === 'matmul_blk.0.attn_q.weight')!;
    expect(nodeKey(prefill, q.id)).toBe('matmul_blk.0.attn_q.weight');
    expect(findNodeByKey(prefill, 'matmul_blk.0.attn_q.weight')).toBe(q.id);
    expect(findNodeByKey(decode, 'matmul_blk.0.attn_q.weight')).toBe(-1);   // decode computes it in fused_qkv
  });
  for (const [g, step] of [[prefill, 0], [decode, 2]] as const) {
    it(`lays the ${g.id} graph out as one row per layer`, () => {
      const rows = layoutGraph(g).rows;
      expect(rows.map((r) => r.key)).toEqual(['head', ...Array.from({ length: LAYERS }, (_, l) => `L${l}`), 'tail']);
      const perRow = g.id === 'prefill' ? 18 : 13;
      for (const r of rows.slice(1, -1)) expect(r.nodes.length).toBe(perRow);
      expect(rows[rows.length - 1].nodes.map((id) => g.nodes[id].name)).toEqual(['rms_norm', 'matmul_output.weight']);
    });
    it(`fills every pipeline column with per-layer values (${g.id})`, () => {
      const p = buildPipeline(g);
      expect(p.layers.map((l) => l.layer)).toEqual(Array.from({ length: LAYERS }, (_, l) => l));
      for (const l of p.layers) expect(l.stages.map((s) => s.kind)).toEqual(LAYER_STAGES);
      expect(p.tail.map((s) => s.kind)).toEqual(['final_norm', 'lm_head', 'sampler']);
      for (const kind of LAYER_STAGES) {
        const stages = p.layers.map((l) => l.stages.find((s) => s.kind === kind)!);
        expect(stages.every((s) => s.nodes.length > 0)).toBe(true);
        const absmax = stages.map((s) => summarizeStage(g, s, trace.steps[step]).absmax);
        expect(absmax.every((v) => v !== null && v > 0)).toBe(true);
        expect(new Set(absmax).size).toBe(LAYERS);   // each layer shows its own value
      }
    });
  }
});
