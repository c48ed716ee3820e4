// The one colour scale for comparison error (node colours, the worst-nodes table, the error
// chart). Int8 paths live between 20 and 40 dB, so the ramp spends most of its range there:
// red below 10 dB, orange at 20, yellow at 30 (the default threshold), light green at 40,
// green from 60 dB, dark green for identical. Cosine and relative error are placed on the same
// ramp through their dB equivalents, so one colour means one error size whichever is shown.
import { scaleLinear } from 'd3-scale';
import { SQNR_CAP_DB } from '../model/compare';

export type ErrorKind = 'db' | 'cos' | 'rel';

const STOPS_DB = [10, 20, 30, 40, 60];
const COLORS = ['#a50026', '#f46d43', '#fee08b', '#a6d96a', '#1a9850'];
export const IDENTICAL_FILL = '#00582e';

const ramp = scaleLinear<string>().domain(STOPS_DB).range(COLORS).clamp(true);

// dB equivalent of a metric value. rel = ‖a−b‖/‖b‖ is exactly 10^(−SQNR/20) against the same
// reference; 1 − cos ≈ rel²/2 for an error uncorrelated with the signal.
export function toDb(kind: ErrorKind, v: number): number {
  if (kind === 'db') return v;
  if (kind === 'rel') return v <= 0 ? Infinity : -20 * Math.log10(v);
  const d = 2 * (1 - v);
  return d <= 0 ? Infinity : -10 * Math.log10(d);
}

function fromDb(kind: ErrorKind, db: number): number {
  if (kind === 'db') return db;
  if (kind === 'rel') return 10 ** (-db / 20);
  return 1 - 10 ** (-db / 10) / 2;
}

export function errorFill(kind: ErrorKind, v: number): string {
  const db = toDb(kind, v);
  return db >= SQNR_CAP_DB ? IDENTICAL_FILL : ramp(db);
}

// Legend ticks in the metric's own units, at the ramp's stops.
export function errorTicks(kind: ErrorKind): { at: number; label: string }[] {
  return STOPS_DB.map((db, i) => {
    const v = fromDb(kind, db);
    const label = kind === 'db' ? `${db} dB` : kind === 'rel' ? v.toPrecision(2) : v.toFixed(Math.min(7, 1 + Math.round(db / 10)));
    return { at: i / (STOPS_DB.length - 1), label };
  });
}

// The CSS gradient of the ramp with its stops evenly spaced (the legend spaces the ticks so).
export function errorGradientCss(): string {
  return `linear-gradient(to right, ${COLORS.map((c, i) => `${c} ${(i / (COLORS.length - 1)) * 100}%`).join(', ')})`;
}
