// Horizontal bar chart: one labelled bar per datum, value text with its unit at the bar's end.
// Negative values (deltas) grow left of a zero line.
import { scaleLinear } from 'd3-scale';
import { select } from 'd3-selection';
import { maxOf, minOf } from '../model/extent';

export interface Bar { label: string; value: number; text: string; title?: string; highlight?: boolean; onClick?: () => void }

export function barChart(bars: Bar[], opts: { width: number; labelWidth?: number; barH?: number; color?: string; cls?: string; textWidth?: number }): SVGSVGElement {
  const lw = opts.labelWidth ?? 120, bh = opts.barH ?? 16, tw = opts.textWidth ?? 84;
  const height = bars.length * (bh + 3) + 4;
  const lo = Math.min(0, minOf(bars.map((b) => b.value))), hi = Math.max(0, maxOf(bars.map((b) => b.value)));
  const x = scaleLinear().domain([lo, hi === lo ? lo + 1 : hi]).range([lw, opts.width - tw]);
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', `bar-chart ${opts.cls ?? ''}`).attr('width', opts.width).attr('height', height);
  const g = svg.selectAll('g.bar').data(bars).join('g').attr('class', (d) => `bar${d.highlight ? ' highlight' : ''}${d.onClick ? ' clickable' : ''}`)
    .attr('transform', (_, i) => `translate(0,${2 + i * (bh + 3)})`)
    .on('click', (_, d) => d.onClick?.());
  g.append('title').text((d) => d.title ?? `${d.label}: ${d.text}`);
  g.append('text').attr('class', 'bar-label').attr('x', lw - 6).attr('y', bh / 2).attr('dy', '0.35em').attr('text-anchor', 'end')
    .text((d) => (d.label.length > 22 ? d.label.slice(0, 21) + '…' : d.label));
  g.append('rect').attr('x', (d) => x(Math.min(0, d.value))).attr('width', (d) => Math.max(1, Math.abs(x(d.value) - x(0))))
    .attr('height', bh).attr('fill', (d) => (d.value < 0 ? '#59a14f' : opts.color ?? '#4c78a8'));
  g.append('text').attr('class', 'bar-value').attr('x', (d) => Math.max(x(d.value), x(0)) + 4).attr('y', bh / 2).attr('dy', '0.35em')
    .text((d) => d.text);
  if (lo < 0) svg.append('line').attr('x1', x(0)).attr('x2', x(0)).attr('y1', 0).attr('y2', height).attr('stroke', '#888');
  return svg.node()!;
}
