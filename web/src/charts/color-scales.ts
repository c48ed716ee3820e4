// Colour scales for value grids: diverging around 0, either symmetric-log or clipped at a
// quantile of |x|. Both keep outliers visible: symlog compresses them, the clipped scale
// saturates them and the heatmap marks each saturated cell.
import { scaleSymlog, scaleLinear } from 'd3-scale';
import { interpolateRdBu } from 'd3-scale-chromatic';

export type ValueScaleMode = 'symlog' | 'quantile';

export interface ValueScale {
  mode: ValueScaleMode;
  limit: number;            // colour saturates at ±limit
  constant: number;         // symlog linear region half-width
  color: (v: number) => string;
  clipped: (v: number) => boolean;
  describe: string;         // for the legend
}

// Blue for negative, red for positive, white at 0.
const diverging = (t: number) => interpolateRdBu(1 - t);

// `fullMaxAbs`: the largest |x| of the whole tensor(s) (from the statistics), so the range covers
// the outliers a sampled grid can miss.
export function valueScale(values: Float32Array, mode: ValueScaleMode, fullMaxAbs = 0): ValueScale {
  const abs: number[] = [];
  for (const v of values) if (Number.isFinite(v)) abs.push(Math.abs(v));
  abs.sort((a, b) => a - b);
  const maxAbs = Math.max(abs.length ? abs[abs.length - 1] : 1, Number.isFinite(fullMaxAbs) ? fullMaxAbs : 0);
  const q = (p: number) => (abs.length ? abs[Math.min(abs.length - 1, Math.floor(p * (abs.length - 1)))] : 1);
  if (mode === 'symlog') {
    // Linear near 0 up to the median |x|, logarithmic beyond: the bulk and the outliers both read.
    const constant = Math.max(q(0.5), 1e-6);
    const limit = Math.max(maxAbs, 1e-6);
    const s = scaleSymlog().constant(constant).domain([-limit, limit]).range([0, 1]).clamp(true);
    return { mode, limit, constant, color: (v) => (Number.isFinite(v) ? diverging(s(v)) : '#00ff66'), clipped: () => false,
             describe: `symmetric-log scale, linear within ±${fmt(constant)} (median |x|), full range ±${fmt(limit)}` };
  }
  const limit = Math.max(q(0.99), 1e-6);
  const s = scaleLinear().domain([-limit, limit]).range([0, 1]).clamp(true);
  return { mode, limit, constant: 0, color: (v) => (Number.isFinite(v) ? diverging(s(v)) : '#00ff66'),
           clipped: (v) => Math.abs(v) > limit,
           describe: `linear, clipped at the 99th percentile of |x| = ${fmt(limit)}; max |x| = ${fmt(maxAbs)}; clipped cells are ringed` };
}

// Position of a value on the legend bar (0..1), matching the scale.
export function legendPosition(s: ValueScale, v: number): number {
  if (s.mode === 'symlog') return scaleSymlog().constant(s.constant).domain([-s.limit, s.limit]).range([0, 1]).clamp(true)(v);
  return scaleLinear().domain([-s.limit, s.limit]).range([0, 1]).clamp(true)(v);
}

export function divergingColor(t: number): string {
  return diverging(t);
}

function fmt(x: number): string {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(2) : Number(x.toPrecision(3)).toString();
}
