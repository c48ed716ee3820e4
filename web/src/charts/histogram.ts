// Histogram of a node's values over its own range, with under/overflow (±Inf) counts.
import { axisBottom, axisLeft } from 'd3-axis';
import { scaleLinear, scaleSymlog } from 'd3-scale';
import { select } from 'd3-selection';
import type { Histogram } from '../model/types';
import { el } from '../ui/dom';
import { fmtInt, fmtNum } from '../ui/format';

export function histogram(h: Histogram, width: number): HTMLElement {
  const height = 130, m = { l: 44, r: 8, t: 6, b: 30 };
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', 'histogram').attr('width', width).attr('height', height);
  const lo = Number.isFinite(h.lo) ? h.lo : 0, hi = Number.isFinite(h.hi) && h.hi > lo ? h.hi : lo + 1;
  const x = scaleLinear().domain([lo, hi]).range([m.l, width - m.r]);
  const maxCount = Math.max(1, ...h.counts);
  // Heavy tails leave most bins near zero: a symlog count axis keeps the tail bins visible.
  const y = scaleSymlog().constant(1).domain([0, maxCount]).range([height - m.b, m.t]);
  const bw = (hi - lo) / Math.max(1, h.counts.length);
  svg.append('g').selectAll('rect').data(h.counts).join('rect')
    .attr('x', (_, i) => x(lo + i * bw) + 0.5).attr('width', Math.max(1, x(lo + bw) - x(lo) - 1))
    .attr('y', (d) => y(d)).attr('height', (d) => height - m.b - y(d)).attr('fill', '#4c78a8')
    .append('title').text((d, i) => `[${fmtNum(lo + i * bw)}, ${fmtNum(lo + (i + 1) * bw)}): ${fmtInt(d)} values`);
  svg.append('g').attr('transform', `translate(0,${height - m.b})`).call(axisBottom(x).ticks(5).tickFormat((d) => fmtNum(+d, 3)));
  const yTicks = [0];
  for (let p = 1; p <= maxCount; p *= 10) yTicks.push(p);
  if (maxCount > yTicks[yTicks.length - 1] * 2) yTicks.push(maxCount);
  svg.append('g').attr('transform', `translate(${m.l},0)`).call(axisLeft(y).tickValues(yTicks).tickFormat((d) => fmtInt(+d)));
  svg.append('text').attr('x', width - m.r).attr('y', height - 2).attr('text-anchor', 'end').attr('class', 'axis-label').text('value (activation units)');
  return el('div', { class: 'histogram-wrap' }, svg.node()!,
    el('div', { class: 'legend-note', text: `${h.counts.length} bins over [${fmtNum(h.lo)}, ${fmtNum(h.hi)}]; count axis symmetric-log (values per bin)` +
      `; −Inf: ${fmtInt(h.underflow)}, +Inf: ${fmtInt(h.overflow)}` + (h.derived ? '; computed here from the sampled values (v1 trace)' : '') }));
}
