// Per-node colour metrics: one number per (step, node), and a scale description for the legend.
import type { Comparison } from './compare';
import type { Step, Trace } from './types';

export type MetricId = 'absmean' | 'absmax' | 'nonfinite' | 'time' | 'error';

export interface MetricInfo {
  id: MetricId; label: string; unit: string;
  kind: 'log' | 'count' | 'db';   // how the colour scale maps values
}

export const METRICS: MetricInfo[] = [
  { id: 'absmean', label: 'mean |x|', unit: 'activation units', kind: 'log' },
  { id: 'absmax', label: 'max |x|', unit: 'activation units', kind: 'log' },
  { id: 'nonfinite', label: 'NaN/Inf count', unit: 'values', kind: 'count' },
  { id: 'time', label: 'time', unit: 'µs', kind: 'log' },
  { id: 'error', label: 'comparison error (SQNR)', unit: 'dB', kind: 'db' },
];

export function metricInfo(id: MetricId): MetricInfo {
  return METRICS.find((m) => m.id === id)!;
}

export function metricValue(id: MetricId, step: Step, node: number, cmp: Comparison | null): number | null {
  if (id === 'error') {
    const s = cmp?.steps[step.index]?.index === step.index ? cmp.steps[step.index] : cmp?.steps.find((x) => x.index === step.index);
    return s?.nodes.get(node)?.sqnrDb ?? null;
  }
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
  if (id === 'error') return [0, 80];
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
