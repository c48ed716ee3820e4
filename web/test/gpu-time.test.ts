// Where GPU time went (model/gpu-time.ts) on the synthetic CUDA v3 trace: per-node GPU time,
// step span / busy / idle, idle gaps, grouping by node, the GPU-time colour metric and the
// timeline's lanes, each checked against a plain recomputation from the raw JSON.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { timelineLanes, UNATTRIBUTED_LANE } from '../src/charts/kernel-timeline';
import {
  busyIntervals, fusedInto, fusedLabel, gpuTimePerOp, kernelOp, groupByNode, idleGaps, nodeGpuUs, shortKernelName, stepGpu, traceHasGpuTimes, traceHasKernels, whyNoKernels,
} from '../src/model/gpu-time';
import { metricDomain, metricValue } from '../src/model/metrics';
import { parseTrace } from '../src/model/parse';
import type { Kernel } from '../src/model/types';
import { CUPTI_REFUSED, makeCudaV3Trace, makeV2Trace } from './fixtures/make-fixtures';

interface RawKernel { name: string; node: number; start_ns: number; duration_ns: number; unattributed?: string }
interface RawStep { index: number; kernels: RawKernel[]; nodes: { id: number; gpu_us?: number; gpu_start_us?: number }[]; gpu_ms?: number; gpu_busy_ms?: number; idle_ms?: number }
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const doc = makeCudaV3Trace();
const raw = doc.steps as unknown as RawStep[];
const trace = parseTrace(clone(doc), 'cuda.json');

// Busy time by brute force: count every nanosecond some kernel covers (the kernels are µs long).
function busyByCounting(ks: RawKernel[]): number {
  const lo = Math.min(...ks.map((k) => k.start_ns)), hi = Math.max(...ks.map((k) => k.start_ns + k.duration_ns));
  const covered = new Uint8Array(hi - lo);
  for (const k of ks) covered.fill(1, k.start_ns - lo, k.start_ns + k.duration_ns - lo);
  return covered.reduce((a, b) => a + b, 0);
}

const kernel = (node: number, start: number, dur: number, name = `k${start}`): Kernel =>
  ({ name, node, startNs: start, durationNs: dur, grid: [1, 1, 1], block: [32, 1, 1], registers: 16, sharedBytes: 0 });

describe('the CUDA v3 fixture', () => {
  it('satisfies the v3 schema, with and without CUPTI', () => {
    const schema = JSON.parse(readFileSync(new URL('../../traces/schema/minfer-trace-v3.schema.json', import.meta.url), 'utf8'));
    const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);
    for (const d of [doc, makeCudaV3Trace({ cupti: false, seed: 2 })]) expect(validate(d), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
  });
  it('has kernels on steps 0-4 only, a dropped count, an unattributed kernel per step', () => {
    expect(raw.map((s) => s.kernels.length > 0)).toEqual([true, true, true, true, true, false, false]);
    expect(doc.steps[3].kernels_dropped).toBe(5);
    for (const s of raw.slice(0, 5)) expect(s.kernels.filter((k) => k.node < 0).map((k) => k.unattributed)).toEqual(['recorder: on-device node summaries']);
  });
});

describe('per-node GPU time', () => {
  it('is the recorded gpu_us, which equals the sum of the node\'s kernels', () => {
    let checked = 0;
    for (const s of raw) {
      const step = trace.steps[s.index];
      for (const r of s.nodes) {
        const sum = s.kernels.filter((k) => k.node === r.id).reduce((a, k) => a + k.duration_ns, 0) / 1000;
        if (sum === 0) { expect(r.gpu_us).toBeUndefined(); expect(nodeGpuUs(step, r.id)).toBeNull(); continue; }
        expect(r.gpu_us).toBeCloseTo(sum, 9);
        expect(r.gpu_start_us).toBe(Math.min(...s.kernels.filter((k) => k.node === r.id).map((k) => k.start_ns)) / 1000);
        expect(nodeGpuUs(step, r.id)).toBe(r.gpu_us);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(300);
  });
  it('falls back to the sum of the kernels when the record has no gpu_us (v2 CUDA traces)', () => {
    const v2 = makeV2Trace({ backend: 'cuda', decodeSteps: 2 });
    const t = parseTrace(clone(v2), 'v2.json');
    const s = v2.steps[1] as unknown as RawStep;
    const ids = [...new Set(s.kernels.map((k) => k.node))];
    expect(ids.length).toBeGreaterThan(20);
    for (const id of ids) expect(nodeGpuUs(t.steps[1], id)).toBeCloseTo(s.kernels.filter((k) => k.node === id).reduce((a, k) => a + k.duration_ns, 0) / 1000, 9);
  });
  it('colours the graph: the gpu metric is the node GPU time, its range spans all steps', () => {
    let lo = Infinity, hi = -Infinity;
    for (const s of raw) for (const r of s.nodes) if (r.gpu_us) { lo = Math.min(lo, r.gpu_us); hi = Math.max(hi, r.gpu_us); }
    expect(metricDomain('gpu', trace, null)).toEqual([lo, hi]);
    const q = trace.graphs.get('decode')!.nodes.find((n) => n.name === 'blk.2.attn_q')!.id;
    expect(metricValue('gpu', trace.steps[2], q, null)).toBe(raw[2].nodes.find((r) => r.id === q)!.gpu_us);
    expect(metricValue('gpu', trace.steps[5], q, null)).toBeNull();   // no CUPTI on step 5
  });
  it('is offered only for traces with GPU times', () => {
    expect(traceHasGpuTimes(trace)).toBe(true);
    expect(traceHasGpuTimes(parseTrace(makeV2Trace({ backend: 'cuda', decodeSteps: 1 }), 'v2c.json'))).toBe(true);
    expect(traceHasGpuTimes(parseTrace(makeV2Trace({ decodeSteps: 1 }), 'cpu.json'))).toBe(false);
    // The colour needs kernel records: not offered when CUPTI was off (the GPU spans from CUDA
    // events still fill the timings).
    const off = parseTrace(makeCudaV3Trace({ cupti: false }), 'off.json');
    expect([traceHasKernels(trace), traceHasKernels(off), traceHasGpuTimes(off)]).toEqual([true, false, true]);
    expect(traceHasKernels(parseTrace(makeV2Trace({ decodeSteps: 1 }), 'cpu.json'))).toBe(false);
  }, 30_000);  // four traces built and parsed: past vitest's 5 s on a loaded 2-core machine
});

describe('step GPU figures', () => {
  it('span, busy and idle as recorded agree with a brute-force recomputation', () => {
    for (const s of raw.slice(0, 5)) {
      const lo = Math.min(...s.kernels.map((k) => k.start_ns)), hi = Math.max(...s.kernels.map((k) => k.start_ns + k.duration_ns));
      const busy = busyByCounting(s.kernels);
      const g = stepGpu(trace.steps[s.index]);
      expect(g.recorded).toBe(true);
      expect(g.gpuMs).toBeCloseTo((hi - lo) / 1e6, 6);
      expect(g.busyMs).toBeCloseTo(busy / 1e6, 6);
      expect(g.idleMs).toBeCloseTo((hi - lo - busy) / 1e6, 6);
      expect(g.kernels).toBe(s.kernels.length);
      expect(g.unattributed).toBe(1);
      expect(g.dropped).toBe(s.index === 3 ? 5 : 0);
    }
  });
  it('are computed from the kernels when the trace does not carry them', () => {
    const bare = clone(doc) as unknown as { steps: Record<string, unknown>[] };
    for (const s of bare.steps) for (const k of ['gpu_ms', 'gpu_busy_ms', 'idle_ms', 'kernels_dropped']) delete s[k];
    const t = parseTrace(bare, 'bare.json');
    for (const s of raw.slice(0, 5)) {
      const g = stepGpu(t.steps[s.index]), rec = stepGpu(trace.steps[s.index]);
      expect(g.recorded).toBe(false);
      expect(g.gpuMs).toBeCloseTo(rec.gpuMs!, 9);
      expect(g.busyMs).toBeCloseTo(rec.busyMs!, 9);
      expect(g.idleMs).toBeCloseTo(rec.idleMs!, 9);
      expect(g.dropped).toBeNull();
    }
  });
  it('keeps the CUDA-event span and the host enqueue time apart from the wall time', () => {
    for (const s of doc.steps as unknown as { index: number; event_ms: number; host_ms: number; time_ms: number }[]) {
      const g = stepGpu(trace.steps[s.index]);
      expect([g.eventMs, g.hostMs, g.wallMs]).toEqual([s.event_ms, s.host_ms, s.time_ms]);
      expect(g.hostMs!).toBeLessThan(g.wallMs!);   // a CUDA step is enqueued faster than it runs
    }
  });
  it('a step outside CUPTI keeps its CUDA-event span and says why it has no kernels', () => {
    const g = stepGpu(trace.steps[5]);
    expect(g.kernels).toBe(0);
    expect(g.gpuMs).toBe(doc.steps[5].gpu_ms);
    expect(g.busyMs).toBeNull();
    expect(g.note).toBe('cupti: not on this step (--trace-kernels 0-4)');
    expect(whyNoKernels(trace, trace.steps[5])).toMatch(/step 5: cupti: not on this step/);
  });
  it('CUPTI refused: the reason from meta.cupti', () => {
    const t = parseTrace(makeCudaV3Trace({ cupti: false }), 'nocupti.json');
    expect(t.steps.every((s) => s.kernels.length === 0)).toBe(true);
    expect(whyNoKernels(t, t.steps[1])).toContain(CUPTI_REFUSED);
    expect(whyNoKernels(parseTrace(makeV2Trace({ decodeSteps: 1 }), 'cpu.json'), trace.steps[0])).toMatch(/cpu backend/);
  });
});

describe('kernel names', () => {
  it('keep the function and template arguments of a CUPTI signature', () => {
    expect(shortKernelName('void minfer::cuda::(anonymous namespace)::mmq_kernel<(minfer::WeightType)2, 1>(unsigned char const*, long, long, minfer::BlockQ8_1 const*, long, float const*, float*)'))
      .toBe('mmq_kernel<(WeightType)2, 1>');
    expect(shortKernelName('minfer::cuda::(anonymous namespace)::rope_neox_kernel(float const*, int const*, float*, long, int, double)')).toBe('rope_neox_kernel');
    expect(shortKernelName('void minfer::cuda::(anonymous namespace)::map_kernel<minfer::cuda::(anonymous namespace)::AddOp>(float const*, float const*, float*, long, bool, minfer::cuda::(anonymous namespace)::AddOp)'))
      .toBe('map_kernel<AddOp>');
    for (const plain of ['mmq_q8_0_kernel', 'mul_mat_vec_q<Q8_0, 1>', 'trace_node_summaries']) expect(shortKernelName(plain)).toBe(plain);
  });
});

describe('idle gaps and grouping', () => {
  it('a node computed inside a fused kernel points to it and has no GPU time of its own', () => {
    const nodes = trace.graphs.get('decode')!.nodes, step = trace.steps[1];
    const residuals = nodes.filter((n) => n.name.endsWith('.attn_residual'));
    expect(residuals.length).toBe(4);
    for (const r of residuals) {
      const fused = fusedInto(step, r.id);
      expect(fused.length).toBe(1);
      expect(nodes[fused[0].node].name).toBe(r.name.replace('attn_residual', 'ffn_norm'));
      expect(fused[0].covers).toEqual([r.id, fused[0].node]);
      expect(nodeGpuUs(step, r.id)).toBeNull();
      expect(fusedLabel(step, r.id, nodes)).toBe('fused → ffn_norm');
      expect(kernelOp(fused[0], nodes)).toBe('add+rms_norm');
    }
    expect(fusedLabel(step, nodes.find((n) => n.name === 'blk.0.attn_q')!.id, nodes)).toBe('');
    expect(fusedInto(trace.steps[0], residuals[0].id)).toEqual([]);   // the prefill runs it on its own
  });
  it('merges overlapping kernels and finds the gap between them', () => {
    const ks = [kernel(1, 0, 10, 'a'), kernel(2, 5, 10, 'b'), kernel(3, 20, 1, 'c'), kernel(-1, 30, 5, 'd')];
    expect(busyIntervals(ks)).toEqual([{ startNs: 0, endNs: 15 }, { startNs: 20, endNs: 21 }, { startNs: 30, endNs: 35 }]);
    const gaps = idleGaps(ks);
    expect(gaps.map((g) => [g.startNs, g.endNs, g.before.name, g.after.name])).toEqual([[15, 20, 'b', 'c'], [21, 30, 'c', 'd']]);
    expect(idleGaps([kernel(1, 0, 10), kernel(1, 10, 5)])).toEqual([]);   // back to back: no gap
  });
  it('the gaps add up to the idle time, and the 40 µs stall is the largest', () => {
    for (const s of trace.steps.slice(0, 5)) {
      const gaps = idleGaps(s.kernels);
      const total = gaps.reduce((a, g) => a + g.endNs - g.startNs, 0);
      expect(total / 1e6).toBeCloseTo(stepGpu(s).idleMs!, 6);
    }
    const g2 = idleGaps(trace.steps[2].kernels).sort((a, b) => (b.endNs - b.startNs) - (a.endNs - a.startNs))[0];
    expect(g2.endNs - g2.startNs).toBeGreaterThan(40000);
    expect(trace.graphs.get('decode')!.nodes[g2.before.node].name).toBe('blk.1.attn_output');
  });
  it('groups kernels by node: one group per node, spanning its kernels', () => {
    for (const s of raw.slice(0, 5)) {
      const { nodes, unattributed } = groupByNode(trace.steps[s.index].kernels);
      const ids = new Set(s.kernels.filter((k) => k.node >= 0).map((k) => k.node));
      expect(nodes.map((g) => g.node).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
      for (const g of nodes) {
        const mine = s.kernels.filter((k) => k.node === g.node);
        expect(g.kernels.length).toBe(mine.length);
        expect(g.startNs).toBe(Math.min(...mine.map((k) => k.start_ns)));
        expect(g.endNs).toBe(Math.max(...mine.map((k) => k.start_ns + k.duration_ns)));
        expect(g.sumNs).toBe(mine.reduce((a, k) => a + k.duration_ns, 0));
      }
      for (let i = 1; i < nodes.length; i++) expect(nodes[i].startNs).toBeGreaterThanOrEqual(nodes[i - 1].startNs);
      expect(unattributed.map((k) => k.name)).toEqual(['trace_node_summaries']);
    }
  });
  it('GPU time per op adds up to all kernel time; kernels without a node have an entry named by their reason', () => {
    const s = trace.steps[1], nodes = trace.graphs.get('decode')!.nodes;
    const per = new Map(gpuTimePerOp(s, nodes));
    const all = raw[1].kernels.reduce((a, k) => a + k.duration_ns, 0) / 1000;
    expect([...per.values()].reduce((a, b) => a + b, 0)).toBeCloseTo(all, 6);
    expect(per.get('(recorder: on-device node summaries)')).toBe(raw[1].kernels.find((k) => k.node < 0)!.duration_ns / 1000);
    expect(per.has('(unattributed)')).toBe(false);
    expect(kernelOp({ ...s.kernels[0], node: -1, unattributed: null }, nodes)).toBe('(unattributed)');
    // A fused kernel counts under the ops it computes together.
    const fusedUs = raw[1].kernels.filter((k) => k.name === 'add_rms_norm_fused').reduce((a, k) => a + k.duration_ns, 0) / 1000;
    expect(fusedUs).toBeGreaterThan(0);
    expect(per.get('add+rms_norm')).toBeCloseTo(fusedUs, 6);
    const mm = raw[1].kernels.filter((k) => k.node >= 0 && nodes[k.node].op === 'matmul').reduce((a, k) => a + k.duration_ns, 0) / 1000;
    expect(per.get('matmul')).toBeCloseTo(mm, 6);
  });
  it('timeline lanes: nodes first, then each op in order of first kernel, no-node and idle last', () => {
    const nodes = trace.graphs.get('decode')!.nodes;
    const lanes = timelineLanes(trace.steps[1].kernels, nodes);
    const ops: string[] = [];
    for (const k of [...raw[1].kernels].sort((a, b) => a.start_ns - b.start_ns)) {
      const op = (k as { covers?: number[] }).covers ? 'add+rms_norm' : nodes[k.node]?.op;
      if (k.node >= 0 && !ops.includes(op)) ops.push(op);
    }
    expect(ops).toContain('add+rms_norm');
    expect(lanes).toEqual(['nodes', ...ops, UNATTRIBUTED_LANE, 'GPU idle']);
    expect(timelineLanes(trace.steps[1].kernels.filter((k) => k.node >= 0), nodes, true)).toEqual(ops);
  });
});
