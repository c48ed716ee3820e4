// Per-node colour metrics: one number per (step, node), and a scale description for the legend.
import { stepOf, type Comparison, type CompareNode } from './compare';
import { nodeGpuUs } from './gpu-time';
import { pointOfNode } from './roofline';
import type { Step, Trace } from './types';

export type MetricId = 'absmean' | 'absmax' | 'nonfinite' | 'time' | 'gpu' | 'roof' | 'error' | 'local' | 'cosine' | 'relerr';

export interface MetricInfo {
  id: MetricId; label: string; unit: string;
  kind: 'log' | 'count' | 'db' | 'cos' | 'rel' | 'fraction';   // how the colour scale maps values (db/cos/rel: views/error-scale.ts)
  comparison?: boolean;           // exists only when two runs are compared
}

export const METRICS: MetricInfo[] = [
  { id: 'absmean', label: 'mean |x|', unit: 'activation units', kind: 'log' },
  { id: 'absmax', label: 'max |x|', unit: 'activation units', kind: 'log' },
  { id: 'nonfinite', label: 'NaN/Inf count', unit: 'values', kind: 'count' },
  { id: 'time', label: 'host time', unit: 'µs', kind: 'log' },
  { id: 'gpu', label: 'GPU time', unit: 'µs', kind: 'log' },   // CUDA traces: sum of the node's kernels
  { id: 'roof', label: 'fraction of roofline', unit: '% of the roof', kind: 'fraction' },   // CUDA traces: model/roofline.ts
  { id: 'error', label: 'SQNR vs reference', unit: 'dB', kind: 'db', comparison: true },
  { id: 'local', label: 'local error (SQNR the node adds itself)', unit: 'dB', kind: 'db', comparison: true },
  { id: 'cosine', label: 'cosine similarity', unit: '1 = same direction', kind: 'cos', comparison: true },
  { id: 'relerr', label: 'relative error ‖A−B‖/‖ref‖', unit: 'ratio', kind: 'rel', comparison: true },
];

export const isErrorKind = (m: MetricInfo) => m.kind === 'db' || m.kind === 'cos' || m.kind === 'rel';

// One comparison metric of a node. The relative L2 error is 10^(−SQNR/20) against the same
// reference (an identity), so grid comparisons that carry only SQNR still have it.
export function compareMetric(id: MetricId, n: CompareNode | undefined): number | null {
  if (!n) return null;
  if (id === 'error') return n.sqnrDb;
  if (id === 'local') return n.local?.sqnrDb ?? null;
  if (id === 'cosine') return n.cosine;
  if (id === 'relerr') return n.relL2 ?? (n.sqnrDb === null ? null : Number.isFinite(n.sqnrDb) ? 10 ** (-n.sqnrDb / 20) : 0);
  return null;
}

export function metricInfo(id: MetricId): MetricInfo {
  return METRICS.find((m) => m.id === id)!;
}

// `trace`: the roofline needs the graph and the device (other metrics read the step alone).
export function metricValue(id: MetricId, step: Step, node: number, cmp: Comparison | null, trace?: Trace): number | null {
  if (metricInfo(id).comparison) return compareMetric(id, stepOf(cmp, step.index)?.nodes.get(node));
  if (id === 'gpu') return nodeGpuUs(step, node);
  if (id === 'roof') return trace ? pointOfNode(trace, step, node)?.fraction ?? null : null;
  const r = step.records.get(node);
  if (!r) return null;
  if (id === 'time') return r.timeUs;
  if (!r.stats) return null;
  if (id === 'absmean') return r.stats.absmean;
  if (id === 'absmax') return Math.max(Math.abs(r.stats.min), Math.abs(r.stats.max));
  return r.stats.nan + r.stats.inf;
}

// Range over every step, so a colour means the same thing on every step.
export function metricDomain(id: MetricId, trace: Trace, cmp: Comparison | null): [number, number] {
  if (metricInfo(id).comparison) return [10, 60];   // a fixed scale: views/error-scale.ts
  if (id === 'roof') return [0, 1];
  let lo = Infinity, hi = -Infinity;
  for (const s of trace.steps) {
    const nodes = trace.graphs.get(s.graphId)?.nodes ?? [];
    for (const r of s.records.values()) {
      if (nodes[r.id]?.dtype === 'i32') continue;   // ids and positions are not activations
      const v = metricValue(id, s, r.id, cmp);
      if (v === null || !Number.isFinite(v)) continue;
      if (id !== 'nonfinite' && v <= 0) continue;
      lo = Math.min(lo, v); hi = Math.max(hi, v);
    }
  }
  if (!Number.isFinite(lo)) return id === 'nonfinite' ? [0, 1] : [1e-3, 1];
  if (id === 'nonfinite') return [0, Math.max(1, hi)];
  return lo === hi ? [lo / 2, hi * 2] : [lo, hi];
}
