// The page's roofline (model/node-work.ts, device-roofs.ts, roofline.ts): the same hand counts as
// recorder/tests/test_roofline.cpp, written as the arithmetic, and the committed CUDA sample's
// totals against the ones `minfer-trace summary` prints for it (the C++ twin of the rule).
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { findDevicePeaks, traceRoofs } from '../src/model/device-roofs';
import { metricDomain, metricValue } from '../src/model/metrics';
import { nodeWork, type StepShape } from '../src/model/node-work';
import { parseTraceText } from '../src/model/parse';
import { pointOfNode, stepRoofline, worstPoints } from '../src/model/roofline';
import type { GraphNode, Trace } from '../src/model/types';

const node = (id: number, name: string, op: string, rows: number, cols: number, src: number[],
  weightType: string | null = null, bias: string | null = null, fusedInto = -1): GraphNode =>
  ({ id, name, op, shape: [rows, cols], dtype: 'f32', src, layer: 0, weight: null, weightType, bias, fusedFrom: [], fusedInto, hasOutput: fusedInto < 0 });

const shape = (phase: string, pos: number, backend = 'cuda', matmulPath = 'mmq'): StepShape =>
  ({ pos, nHead: 14, nHeadKv: 2, headDim: 64, backend, matmulPath, phase, matmulKernels: null });

// A 7-token prefill, as in the C++ test.
const g: GraphNode[] = [
  node(0, 'tokens', 'input', 7, 1, []),
  node(1, 'token_embd', 'get_rows', 7, 896, [0], 'Q4_0'),
  node(2, 'blk.0.attn_norm', 'rms_norm', 7, 896, [1], 'F32'),
  node(3, 'blk.0.attn_k', 'matmul', 7, 128, [2], 'Q8_0', 'blk.0.attn_k.bias'),
  node(4, 'blk.0.attn_k_bias', 'add_bias', 7, 128, [3], null, 'blk.0.attn_k.bias', 3),
  node(5, 'blk.0.q_rope', 'rope', 7, 896, [2, 0]),
  node(6, 'blk.0.kv_store', 'kv_store', 7, 256, [3, 3, 0]),
  node(7, 'blk.0.attn', 'attention', 7, 896, [5, 6, 0]),
  node(8, 'blk.0.attn_residual', 'add', 7, 896, [1, 7]),
  node(9, 'blk.0.ffn_gate', 'matmul', 7, 4864, [8], 'Q4_0'),
  node(10, 'blk.0.ffn_silu', 'silu', 7, 4864, [9], null, null, 11),
  node(11, 'blk.0.ffn_swiglu', 'swiglu', 7, 4864, [9, 9]),
  node(12, 'blk.0.ffn_down', 'matmul', 7, 1024, [11], 'Q4_K'),
  node(13, 'blk.0.silu_alone', 'silu', 7, 4864, [9]),
  node(14, 'last_row', 'last_row', 1, 896, [8]),
  node(15, 'head_in', 'rms_norm', 1, 512, [14], 'F32'),
  node(16, 'logits', 'logits', 1, 1000, [15], 'Q6_K'),
  node(17, 'f16_proj', 'matmul', 7, 32, [15], 'F16'),
  node(18, 'f32_proj', 'matmul', 7, 32, [15], 'F32'),
];
const w = (id: number, s = shape('prefill', 0)) => nodeWork(g, id, s);

describe('node work: hand counts for every op', () => {
  it('input, get_rows (only the gathered rows), rms_norm', () => {
    expect(w(0)).toMatchObject({ bytes: 0, ops: 0 });
    expect(w(1)).toMatchObject({ bytes: 7 * (896 / 32) * 18 + 7 * 4 + 7 * 896 * 4, ops: 0 });
    expect(w(2)).toMatchObject({ bytes: 7 * 896 * 4 * 2 + 896 * 4, ops: 7 * 896 * 4, kind: 'f32' });
  });
  it('matmuls per weight type: Q8_0 with its fused bias, Q4_0, Q4_K, Q6_K logits, F16, F32', () => {
    expect(w(3)).toMatchObject({ bytes: 128 * (896 / 32) * 34 + (7 * 896 + 7 * 128) * 4 + 128 * 4, ops: 2 * 7 * 128 * 896 + 7 * 128, kind: 'int8' });
    expect(w(4)).toMatchObject({ bytes: 0, ops: 0 });
    expect(w(9)).toMatchObject({ bytes: 4864 * (896 / 32) * 18 + (7 * 896 + 7 * 4864) * 4, ops: 2 * 7 * 4864 * 896 });
    expect(w(12)).toMatchObject({ bytes: 1024 * (4864 / 256) * 144 + (7 * 4864 + 7 * 1024) * 4, ops: 2 * 7 * 1024 * 4864 });
    expect(w(16)).toMatchObject({ bytes: 1000 * (512 / 256) * 210 + (1 * 512 + 1 * 1000) * 4, ops: 2 * 1 * 1000 * 512 });
    expect(w(17)).toMatchObject({ bytes: 32 * 512 * 2 + (7 * 512 + 7 * 32) * 4, ops: 2 * 7 * 32 * 512, kind: 'f16' });
    expect(w(18)).toMatchObject({ bytes: 32 * 512 * 4 + (7 * 512 + 7 * 32) * 4, kind: 'f32' });
  });
  it('the recorded kernel decides the path: the CUDA f16 GEMM reads an f16 copy', () => {
    const s = { ...shape('prefill', 0, 'cuda', 'f16'), matmulKernels: { 'blk.0.ffn_gate': 'cublas f16 gemm (W16 cache)' } };
    expect(w(9, s)).toMatchObject({ bytes: 4864 * 896 * 2 + (7 * 896 + 7 * 4864) * 4, kind: 'f16' });
    expect(w(9, shape('decode', 7, 'cuda', 'f16')).kind).toBe('int8');
    expect(w(9, shape('prefill', 0, 'cpu', 'f32'))).toMatchObject({ bytes: 4864 * (896 / 32) * 18 + (7 * 896 + 7 * 4864) * 4, kind: 'f32' });
  });
  it('rope, kv_store, add, swiglu with its fused silu, an unfused silu, last_row', () => {
    expect(w(5)).toMatchObject({ bytes: 7 * 896 * 4 * 2 + 7 * 4, ops: 7 * 896 * 3 });
    expect(w(6)).toMatchObject({ bytes: 7 * 256 * 4 * 2 + 7 * 4, ops: 0 });
    expect(w(8)).toMatchObject({ bytes: 7 * 896 * 4 * 3, ops: 7 * 896 });
    expect(w(11)).toMatchObject({ bytes: 7 * 4864 * 4 * 3, ops: 7 * 4864 * (3 + 1) });
    expect(w(10)).toMatchObject({ bytes: 0, ops: 0 });
    expect(w(13)).toMatchObject({ bytes: 7 * 4864 * 4 * 2, ops: 7 * 4864 * 3 });
    expect(w(14)).toMatchObject({ bytes: 896 * 4 * 2, ops: 0 });
  });
  it('head_rms_norm and rope_normal with rope_freqs (qwen3, llama), as the C++ test counts them', () => {
    const f: GraphNode[] = [...g,
      node(19, 'blk.0.attn_q_norm', 'head_rms_norm', 7, 896, [2], 'F32'),
      { ...node(20, 'blk.0.q_rope_normal', 'rope_normal', 7, 896, [19, 0], 'F32'), weight: 'rope_freqs.weight' },
      node(21, 'blk.0.q_rope_plain', 'rope_normal', 7, 896, [19, 0])];
    const s = shape('prefill', 0);
    expect(nodeWork(f, 19, s)).toMatchObject({ bytes: 7 * 896 * 4 * 2 + 64 * 4, ops: 7 * 896 * 4, known: true });
    expect(nodeWork(f, 20, s)).toMatchObject({ bytes: 7 * 896 * 4 * 2 + 7 * 4 + 32 * 4, ops: 7 * 896 * 3, known: true });
    expect(nodeWork(f, 21, s)).toMatchObject({ bytes: 7 * 896 * 4 * 2 + 7 * 4, ops: 7 * 896 * 3 });
  });

  it('attention: causal in the prefill, the whole cache in a decode step', () => {
    expect(w(7)).toMatchObject({ ops: 28 * 14 * (2 * 64 + 2 * 64), bytes: 7 * 896 * 4 * 2 + 2 * 7 * (2 * 64) * 4, kind: 'f16' });
    const d = [node(0, 'q', 'rope', 1, 896, []), node(1, 'blk.0.attn', 'attention', 1, 896, [0])];
    expect(nodeWork(d, 1, shape('decode', 17))).toMatchObject({ ops: 18 * 14 * (2 * 64 + 2 * 64), bytes: 1 * 896 * 4 * 2 + 2 * 18 * (2 * 64) * 4, kind: 'f32' });
  });
});

describe('device roofs', () => {
  it('knows the H200 and H100s by name, nothing for a CPU or an unknown GPU', () => {
    expect(findDevicePeaks('NVIDIA H200 (sm_90, 139.8 GiB)')?.int8Tops).toBe(1979);
    expect(findDevicePeaks('NVIDIA H100 PCIe')?.f16Tflops).toBe(756);
    expect(findDevicePeaks('AMD EPYC')).toBeNull();
  });
});

const sample = new URL('../../traces/qwen2.5-0.5b-q4_0-cuda-mmq.json.gz', import.meta.url);
const load = (): Trace => parseTraceText(gunzipSync(readFileSync(sample)).toString('utf8'), 'cuda-mmq');

describe.skipIf(!existsSync(sample))('the committed CUDA sample (no measured bandwidth)', () => {
  const t = load();
  it('uses the nominal bandwidth and gives every kernel group a fraction', () => {
    const r = traceRoofs(t.meta);
    expect(r).toMatchObject({ bandwidthGbs: 4800, bandwidthSource: 'nominal' });
    for (const i of [0, 1]) {
      const pts = stepRoofline(t, t.steps[i]);
      expect(pts.length).toBeGreaterThan(100);   // 387 in the prefill, 147 in the fused decode step
      for (const p of pts) expect(p.fraction).not.toBeNull();
    }
    expect(stepRoofline(t, t.steps[5])).toEqual([]);   // outside --trace-kernels
  });
  it('totals the same as minfer-trace summary (the C++ rule) over steps 0-1', () => {
    let gpu = 0, roof = 0;
    for (const i of [0, 1]) for (const p of stepRoofline(t, t.steps[i])) { gpu += p.gpuUs; roof += p.roofUs ?? 0; }
    // `minfer-trace summary traces/qwen2.5-0.5b-q4_0-cuda-mmq.json.gz`: "4201.3 us of GPU time, 134.6 us at the roofs"
    expect(gpu).toBeCloseTo(4201.3, 1);
    expect(roof).toBeCloseTo(134.6, 1);
    const worst = worstPoints(stepRoofline(t, t.steps[1]), 1)[0];
    expect(t.graphs.get('decode')!.nodes[worst.node].name).toBe('logits');   // rms_norm+logits, fused
  });
  it('colours every node of a fused group by the group, over a fixed 0-1 domain', () => {
    const s = t.steps[1], p = pointOfNode(t, s, t.graphs.get('decode')!.nodes.findIndex((n) => n.name === 'result_norm'))!;
    expect(p.nodes.length).toBe(2);
    expect(metricValue('roof', s, p.nodes[0], null, t)).toBe(p.fraction);
    expect(metricValue('roof', t.steps[5], p.nodes[0], null, t)).toBeNull();
    expect(metricDomain('roof', t, null)).toEqual([0, 1]);
  });
  it('a measured bandwidth wins, an unknown device gets no fraction', () => {
    const m = load();
    m.meta.deviceLimits = { readGbs: 4000 };
    expect(traceRoofs(m.meta)).toMatchObject({ bandwidthGbs: 4000, bandwidthSource: 'measured' });
    m.meta.device = 'NVIDIA B300';
    m.meta.deviceLimits = null;
    expect(stepRoofline(m, m.steps[0]).every((p) => p.fraction === null)).toBe(true);
  });
});
