// The work a graph node must do in one step: the twin of recorder/node_work.cpp (the rule is
// described in docs/trace-format.md, "Roofline"; both are tested against the same hand counts).
// Bytes it must move through DRAM (weights read once in their stored type, f32 activations read
// and written once, the KV cache read once) and operations (2 per multiply-add).
import type { GraphNode } from './types';

export type OpsKind = 'int8' | 'f16' | 'f32';
export const OPS_KINDS: OpsKind[] = ['int8', 'f16', 'f32'];

export interface NodeWork { bytes: number; ops: number; kind: OpsKind; known: boolean }

export interface StepShape {
  pos: number;              // the step's first position: the cache holds pos + n rows after it
  nHead: number; nHeadKv: number; headDim: number;
  backend: string; matmulPath: string; phase: string;
  matmulKernels: Record<string, unknown> | null;   // meta.matmul_kernels[phase]: node name → kernel
}

// Elements per block and bytes per block, as engine/core/weight_type.cpp has them.
const BLOCKS: Record<string, [number, number]> = {
  F32: [1, 4], F16: [1, 2], BF16: [1, 2], Q4_0: [32, 18], Q4_1: [32, 20], Q5_0: [32, 22], Q5_1: [32, 24],
  Q8_0: [32, 34], Q8_1: [32, 36], Q4_K: [256, 144], Q5_K: [256, 176], Q6_K: [256, 210], Q8_K: [256, 292],
};
const F32 = 4;   // activations f32, ids and positions i32

const rows = (n: GraphNode) => n.shape[0] ?? 0;
const cols = (n: GraphNode) => n.shape[1] ?? 0;

// Bytes of r rows of c elements stored as `type`; an unknown type or partial blocks count as f32.
function storedBytes(type: string | null, r: number, c: number): number {
  const b = type ? BLOCKS[type.toUpperCase()] : undefined;
  if (!b || c % b[0] !== 0) return F32 * r * c;
  return r * (c / b[0]) * b[1];
}

const quantized = (type: string | null) => (type ? (BLOCKS[type.toUpperCase()]?.[0] ?? 1) > 1 : false);

// How a matmul's weight is read and its dots computed: the recorded kernel decides when the trace
// has it, else the path (see node_work.cpp's matmul_path).
function matmulPath(n: GraphNode, s: StepShape): { f16Copy: boolean; kind: OpsKind } {
  const k = s.matmulKernels?.[n.name];
  if (typeof k === 'string') {
    if (k.includes('W16')) return { f16Copy: quantized(n.weightType), kind: 'f16' };
    if (k.includes('Q8_')) return { f16Copy: false, kind: 'int8' };
    if (k.includes('f16')) return { f16Copy: false, kind: 'f16' };
    return { f16Copy: false, kind: 'f32' };
  }
  if (quantized(n.weightType)) {
    if (s.matmulPath === 'mmq' || s.phase === 'decode') return { f16Copy: false, kind: 'int8' };
    if (s.backend === 'cuda') return { f16Copy: true, kind: 'f16' };
    return { f16Copy: false, kind: 'f32' };
  }
  const wt = n.weightType?.toUpperCase();
  return { f16Copy: false, kind: wt === 'F16' || wt === 'BF16' ? 'f16' : 'f32' };
}

function matmulWork(nodes: GraphNode[], n: GraphNode, s: StepShape): NodeWork {
  const m = rows(n), out = cols(n), k = n.src.length ? cols(nodes[n.src[0]]) : 0;
  const p = matmulPath(n, s);
  const weight = p.f16Copy ? 2 * out * k : storedBytes(n.weightType, out, k);
  const w: NodeWork = { bytes: weight + F32 * (m * k + m * out), ops: 2 * m * out * k, kind: p.kind, known: true };
  if (n.bias) { w.bytes += F32 * out; w.ops += m * out; }
  return w;
}

// Causal attention: query i of n (from pos) sees pos+i+1 keys; QK and PV are head_dim
// multiply-adds each per (head, query, key); the f32 K and V cache is read once.
function attentionWork(n: GraphNode, s: StepShape): NodeWork {
  const q = rows(n), width = cols(n);
  const keys = q * s.pos + (q * (q + 1)) / 2;
  return {
    bytes: F32 * (2 * q * width + 2 * (s.pos + q) * s.nHeadKv * s.headDim),
    ops: 4 * s.headDim * s.nHead * keys,
    kind: s.backend === 'cuda' && q > 1 ? 'f16' : 'f32',
    known: true,
  };
}

const simple = (bytes: number, ops: number): NodeWork => ({ bytes, ops, kind: 'f32', known: true });

export function nodeWork(nodes: GraphNode[], id: number, s: StepShape): NodeWork {
  const n = nodes[id];
  if (n.fusedInto >= 0 || n.op === 'input') return simple(0, 0);
  const r = rows(n), d = cols(n), e = r * d;
  switch (n.op) {
    case 'matmul': case 'logits': return matmulWork(nodes, n, s);
    case 'attention': return attentionWork(n, s);
    case 'get_rows': return simple(storedBytes(n.weightType, r, d) + F32 * r + F32 * e, 0);
    case 'rms_norm': return simple(2 * F32 * e + storedBytes(n.weightType, 1, d), 4 * e);
    // qwen3's per-head Q/K norm: rms_norm's work with one head_dim weight row for every head
    case 'head_rms_norm': return simple(2 * F32 * e + storedBytes(n.weightType, 1, s.headDim), 4 * e);
    // both layouts; Llama 3's rope_freqs (head_dim/2 f32 divisors) read when the node has them
    case 'rope': case 'rope_normal': return simple(2 * F32 * e + F32 * r + (n.weight ? F32 * Math.floor(s.headDim / 2) : 0), 3 * e);
    case 'kv_store': return simple(2 * F32 * e + F32 * r, 0);
    case 'add': case 'mul': return simple(3 * F32 * e, e);
    case 'add_bias': return simple(2 * F32 * e + F32 * d, e);
    case 'silu': return simple(2 * F32 * e, 3 * e);
    case 'swiglu': return simple(3 * F32 * e, 4 * e);
    case 'last_row': return simple(2 * F32 * d, 0);
    default: {   // an op this rule does not know: its tensors, no ops
      let bytes = F32 * e;
      for (const sid of n.src) bytes += F32 * rows(nodes[sid]) * cols(nodes[sid]);
      return { bytes, ops: 0, kind: 'f32', known: false };
    }
  }
}
