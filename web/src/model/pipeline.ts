// The semantic pipeline of a decoder graph, derived from the operators (not from a model size):
//   Input → Embedding → [Layer × N: RMSNorm → Attention → +Residual → RMSNorm → FFN → +Residual]
//   → Final norm → LM head → Sampler
// Each node lands in one stage by its op, weight name and position in its layer, so it works
// for our v2 names ("blk.3.attn_q") and upstream v1 names ("matmul_blk.3.attn_q.weight").
import type { GraphNode, Step, TraceGraph } from './types';

export type StageKind = 'input' | 'embedding' | 'attn_norm' | 'attention' | 'attn_residual' | 'ffn_norm' | 'ffn' |
  'ffn_residual' | 'final_norm' | 'lm_head' | 'sampler';

export const LAYER_STAGES: StageKind[] = ['attn_norm', 'attention', 'attn_residual', 'ffn_norm', 'ffn', 'ffn_residual'];

export const STAGE_LABEL: Record<StageKind, string> = {
  input: 'Input', embedding: 'Embedding', attn_norm: 'RMSNorm', attention: 'Attention', attn_residual: '+Residual',
  ffn_norm: 'RMSNorm', ffn: 'FFN', ffn_residual: '+Residual', final_norm: 'Final norm', lm_head: 'LM head', sampler: 'Sampler',
};

export const STAGE_HELP: Record<StageKind, string> = {
  input: 'token ids and positions of the step',
  embedding: 'looks up one row of the embedding matrix per token',
  attn_norm: 'RMS-normalizes the residual stream before attention (times a learned gain)',
  attention: 'Q/K/V projections (+bias in qwen2), per-head Q/K RMSNorm (qwen3), RoPE, the KV-cache store, causal attention over the cache, output projection',
  attn_residual: 'adds the attention output back onto the residual stream',
  ffn_norm: 'RMS-normalizes the residual stream before the FFN',
  ffn: 'gate and up projections, SwiGLU, down projection',
  ffn_residual: 'adds the FFN output back onto the residual stream',
  final_norm: 'takes the last token\'s row and RMS-normalizes it',
  lm_head: 'projects onto the vocabulary: one logit per token id',
  sampler: 'turns the logits into the next token (temperature, top-k/top-p, seed)',
};

export interface Stage {
  key: string;              // "embedding", "L3.attention", …
  kind: StageKind;
  layer: number;            // -1 outside the blocks
  nodes: number[];          // execution order
  output: number;           // the node whose output leaves the stage (-1: none, e.g. sampler)
}

export interface Pipeline {
  head: Stage[];
  layers: { layer: number; stages: Stage[] }[];
  tail: Stage[];
  byNode: Map<number, Stage>;
}

// llama's "rope_normal" (ggml's name for adjacent-pair RoPE) is no norm.
const isNorm = (n: GraphNode) => (/norm/.test(n.op) && !/^rope/.test(n.op)) || (!!n.weight && /norm/.test(n.weight));
const isResidual = (n: GraphNode) => n.op === 'add' && !n.weight && n.src.length === 2;
const weightClass = (n: GraphNode) => (n.weight ?? '').replace(/^.*blk\.\d+\./, '');

export function buildPipeline(g: TraceGraph): Pipeline {
  const head: Stage[] = [], tail: Stage[] = [];
  const layers = new Map<number, Map<StageKind, Stage>>();
  const byNode = new Map<number, Stage>();
  const outside = new Map<StageKind, Stage>();
  const stageOut = (kind: StageKind, layer: number): Stage => {
    if (layer < 0) {
      let s = outside.get(kind);
      if (!s) { s = { key: kind, kind, layer, nodes: [], output: -1 }; outside.set(kind, s); (kind === 'input' || kind === 'embedding' ? head : tail).push(s); }
      return s;
    }
    let m = layers.get(layer);
    if (!m) { m = new Map(); layers.set(layer, m); }
    let s = m.get(kind);
    if (!s) { s = { key: `L${layer}.${kind}`, kind, layer, nodes: [], output: -1 }; m.set(kind, s); }
    return s;
  };
  // Per layer: where we are in RMSNorm → Attention → +Residual → RMSNorm → FFN → +Residual.
  const phase = new Map<number, number>();
  const pending: GraphNode[] = [];    // fused nodes listed before the node they were folded into
  let seenLayers = false;
  for (const n of g.nodes) {
    if (n.fusedInto >= 0) { const host = byNode.get(n.fusedInto); if (host) { host.nodes.push(n.id); byNode.set(n.id, host); } else pending.push(n); continue; }
    let kind: StageKind;
    if (n.layer >= 0) {
      seenLayers = true;
      const p = phase.get(n.layer) ?? 0;    // 0 before/at attn norm, 1 attention, 2 after attn residual, 3 ffn
      const wc = weightClass(n);
      if (isNorm(n) && !/^(attn|ffn)_(q|k|v)_?norm/.test(wc)) {
        const ffnSide = /ffn/.test(wc) || (!/attn/.test(wc) && p >= 2);
        kind = ffnSide ? 'ffn_norm' : 'attn_norm';
        phase.set(n.layer, ffnSide ? 3 : 1);
      } else if (isResidual(n)) {
        kind = p >= 3 ? 'ffn_residual' : 'attn_residual';
        phase.set(n.layer, p >= 3 ? 4 : 2);
      } else if (/^ffn/.test(wc) || n.op === 'swiglu' || n.op === 'silu' || /(^|_)ffn/.test(n.name)) {
        kind = 'ffn';
      } else if (/^attn/.test(wc)) {
        kind = 'attention';
      } else {
        kind = p >= 3 ? 'ffn' : 'attention';
      }
    } else if (n.op === 'input') {
      kind = 'input';
    } else if (!seenLayers) {
      kind = 'embedding';
    } else if (n.op === 'logits' || (n.op === 'matmul' && /^(output|token_embd)\.weight$/.test(n.weight ?? '')) || /logits|lm_head/.test(n.name)) {
      kind = 'lm_head';
    } else {
      kind = 'final_norm';
    }
    const s = stageOut(kind, n.layer >= 0 ? n.layer : -1);
    s.nodes.push(n.id);
    byNode.set(n.id, s);
    if (n.hasOutput) s.output = n.id;
  }
  for (const n of pending) {
    const host = byNode.get(n.fusedInto);
    if (host) { host.nodes.push(n.id); byNode.set(n.id, host); }
  }
  const sampler: Stage = { key: 'sampler', kind: 'sampler', layer: -1, nodes: [], output: -1 };
  tail.push(sampler);
  const order = (k: StageKind) => LAYER_STAGES.indexOf(k);
  return {
    head, tail, byNode,
    layers: [...layers.entries()].sort((a, b) => a[0] - b[0])
      .map(([layer, m]) => ({ layer, stages: [...m.values()].sort((a, b) => order(a.kind) - order(b.kind)) })),
  };
}

export interface StageSummary {
  shape: number[] | null;   // of the stage's output
  weightTypes: string[];
  timeUs: number | null;    // sum of the stage's node times in the step
  absmax: number | null;    // of the stage's output
  absmean: number | null;
  nonfinite: number;        // NaN + Inf over the stage's nodes
  ops: string[];
}

export function summarizeStage(g: TraceGraph, s: Stage, step: Step | undefined): StageSummary {
  const types = new Set<string>();
  const ops: string[] = [];
  let time: number | null = null, nonfinite = 0;
  for (const id of s.nodes) {
    const n = g.nodes[id];
    if (n.weightType && n.weight && !/norm|rope_freqs/.test(n.weight)) types.add(n.weightType);
    if (n.fusedInto < 0 && !ops.includes(n.op)) ops.push(n.op);
    const r = step?.records.get(id);
    if (r?.timeUs !== null && r?.timeUs !== undefined) time = (time ?? 0) + r.timeUs;
    if (r?.stats) nonfinite += r.stats.nan + r.stats.inf;
  }
  const out = s.output >= 0 ? step?.records.get(s.output)?.stats ?? null : null;
  return {
    shape: s.output >= 0 ? g.nodes[s.output].shape : null,
    weightTypes: [...types], timeUs: time,
    absmax: out ? Math.max(Math.abs(out.min), Math.abs(out.max)) : null,
    absmean: out ? out.absmean : null,
    nonfinite, ops,
  };
}
