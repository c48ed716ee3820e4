// Colour of a node for the chosen metric, and the legend that explains it.
import { scaleSequentialLog } from 'd3-scale';
import { interpolateRdYlGn, interpolateViridis, interpolateYlOrRd } from 'd3-scale-chromatic';
import { isErrorKind, type MetricInfo } from '../model/metrics';
import { errorFill, errorGradientCss, errorTicks, IDENTICAL_FILL, type ErrorKind } from './error-scale';
import { el } from '../ui/dom';
import { fmtNum } from '../ui/format';

export const MISSING_FILL = '#eceff3';

export interface NodeColorScale { fill: (v: number) => string; legend: () => HTMLElement }

// `source`: for comparison metrics, where they come from ("full tensor" or "from sampled grid").
export function nodeColorScale(m: MetricInfo, domain: [number, number], threshold: number | null, source: string | null = null): NodeColorScale {
  if (m.kind === 'count') {
    const fill = (v: number) => (v > 0 ? '#d62728' : '#cfe8cf');
    return { fill, legend: () => legendBox(m, [swatch('#cfe8cf', 'none'), swatch('#d62728', '≥ 1 NaN/Inf value'), missing()]) };
  }
  if (m.kind === 'fraction') {
    // The roofline: red far below the roof, green at it. Log scale over 0.1 %..100 %: real nodes
    // sit between 0.1 % and 30 %, which a linear scale paints one red. `source` names the roofs.
    const fill = (v: number) => interpolateRdYlGn(Math.min(1, Math.max(0, Math.log10(Math.max(v, 1e-3)) / 3 + 1)));
    return { fill, legend: () => legendBox(m, [gradient(interpolateRdYlGn, ['≤ 0.1 %', '1 %', '10 %', '100 %']),
      el('div', { class: 'legend-note', text: `log scale; 100 % = at the roof · ${source ?? ''}` }),
      missing('no fraction: no kernel of its own in this step (no CUPTI records, fused away) or no roof known for the device')]) };
  }
  if (isErrorKind(m)) {
    const kind = m.kind as ErrorKind;
    const fill = (v: number) => errorFill(kind, v);
    const ticks = errorTicks(kind);
    return { fill, legend: () => legendBox(m, [
      el('div', { class: 'legend-gradient error-ramp' }, el('div', { class: 'legend-ramp', style: `background: ${errorGradientCss()}` }),
        el('div', { class: 'legend-ticks' }, ...ticks.map((t) => el('span', { style: `left:${t.at * 100}%`, text: t.label })))),
      el('div', { class: 'legend-note', text: [source, kind === 'db' && threshold !== null ? `threshold ${threshold} dB; higher is closer` : kind === 'cos' ? 'placed as SQNR ≈ −10·log10(2(1−cos))' : kind === 'rel' ? 'relative error = 10^(−SQNR/20)' : null].filter(Boolean).join(' · ') }),
      swatch(IDENTICAL_FILL, 'identical'), missing(m.id === 'local' ? 'no local error recorded (only paired traces have it)' : undefined)]) };
  }
  const interp = m.id === 'time' || m.id === 'gpu' ? interpolateYlOrRd : interpolateViridis;
  const s = scaleSequentialLog(interp).domain(domain).clamp(true);
  const fill = (v: number) => s(Math.max(v, domain[0]));
  return { fill, legend: () => legendBox(m, [gradient((t) => interp(t), [fmtNum(domain[0], 3), fmtNum(domain[1], 3)]),
    el('div', { class: 'legend-note', text: 'log scale, range over all steps' }), missing(m.id === 'gpu' ? 'no kernel of its own (fused away, computed inside another node\'s fused kernel, or a step without CUPTI)' : undefined)]) };
}

const textColors = new Map<string, string>();

export function textColor(fill: string): string {
  let c = textColors.get(fill);
  if (!c) { c = luminanceText(fill); textColors.set(fill, c); }
  return c;
}

function luminanceText(fill: string): string {
  let r = 200, g = 200, b = 200;
  const m = /rgb\((\d+),\s*(\d+),\s*(\d+)/.exec(fill);
  if (m) [r, g, b] = [+m[1], +m[2], +m[3]];
  else if (/^#[0-9a-f]{6}$/i.test(fill)) [r, g, b] = [1, 3, 5].map((i) => parseInt(fill.slice(i, i + 2), 16));
  return 0.299 * r + 0.587 * g + 0.114 * b < 140 ? '#fff' : '#111';
}

function legendBox(m: MetricInfo, parts: (HTMLElement | null)[]): HTMLElement {
  return el('div', { class: 'graph-legend' }, el('div', { class: 'legend-title', text: `Node colour: ${m.label} (${m.unit})` }), ...parts);
}

// `ends`: labels spread evenly under the ramp (the first at its left end, the last at its right).
function gradient(color: (t: number) => string, ends: string[]): HTMLElement {
  const stops = Array.from({ length: 11 }, (_, i) => `${color(i / 10)} ${i * 10}%`).join(', ');
  return el('div', { class: 'legend-gradient' }, el('div', { class: 'legend-ramp', style: `background: linear-gradient(to right, ${stops})` }),
    el('div', { class: 'legend-ends' }, ...ends.map((text) => el('span', { text }))));
}

function swatch(color: string, label: string): HTMLElement {
  return el('div', { class: 'legend-swatch' }, el('span', { class: 'sw', style: `background:${color}` }), label);
}

function missing(what = 'not recorded / no output (kv_store)'): HTMLElement {
  return el('div', { class: 'legend-swatch' }, el('span', { class: 'sw missing' }), what);
}
