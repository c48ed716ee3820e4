// A log-log roofline: operational intensity (ops per byte) against achieved rate (ops/s), one
// point per node, the bandwidth slope and one compute ceiling per ops kind drawn as roofs.
import { axisBottom, axisLeft } from 'd3-axis';
import { scaleLog } from 'd3-scale';
import { select } from 'd3-selection';

export interface RooflineDot { id: number; x: number; y: number; kind: string; title: string }
export interface Ceiling { kind: string; label: string; opsPerS: number }

export interface RooflineChartData {
  dots: RooflineDot[];
  bandwidthBytesPerS: number | null;   // null: no bandwidth roof
  ceilings: Ceiling[];
}

export const KIND_COLORS: Record<string, string> = { int8: '#4c78a8', f16: '#f58518', f32: '#54a24b' };

// "1.2 T", "340 G": rates and intensities with SI prefixes up to T (peaks read "1979 T", as
// datasheets give them), the unit is on the axis title.
export function siText(v: number): string {
  const units: [number, string][] = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm']];
  const [f, u] = units.find(([f]) => Math.abs(v) >= f) ?? [1e-3, 'm'];
  const x = v / f;
  return `${x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(0) : x.toPrecision(2).replace(/\.0$/, '')}${u ? ` ${u}` : ''}`;
}

export interface RooflineChart { svg: SVGSVGElement; select(id: number | null): void }

export function rooflineChart(d: RooflineChartData, opts: { width: number; height: number; onClick: (id: number) => void }): RooflineChart {
  const m = { l: 64, r: 120, t: 10, b: 42 };
  const bw = d.bandwidthBytesPerS;
  const top = Math.max(0, ...d.ceilings.map((c) => c.opsPerS));
  const xs = d.dots.map((p) => p.x), ys = d.dots.map((p) => p.y);
  // The domain holds every point and every ridge (where a ceiling meets the slope).
  const ridges = bw ? d.ceilings.map((c) => c.opsPerS / bw) : [];
  const xLo = Math.min(...xs, ...ridges, 1) / 3, xHi = Math.max(...xs, ...ridges, 1) * 3;
  const yLo = Math.min(...ys, bw ? bw * xLo : Infinity) / 3, yHi = Math.max(...ys, top, 1) * 3;
  const x = scaleLog().domain([xLo, xHi]).range([m.l, opts.width - m.r]);
  const y = scaleLog().domain([yLo, yHi]).range([opts.height - m.b, m.t]);
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', 'roofline-chart').attr('width', opts.width).attr('height', opts.height);
  svg.append('g').attr('class', 'axis x').attr('transform', `translate(0,${opts.height - m.b})`)
    .call(axisBottom(x).ticks(6, (v: number) => siText(v)));
  svg.append('g').attr('class', 'axis y').attr('transform', `translate(${m.l},0)`)
    .call(axisLeft(y).ticks(6, (v: number) => siText(v)));
  svg.append('text').attr('class', 'axis-title').attr('x', (m.l + opts.width - m.r) / 2).attr('y', opts.height - 6)
    .attr('text-anchor', 'middle').text('operational intensity (ops per byte moved, log)');
  svg.append('text').attr('class', 'axis-title').attr('transform', `translate(14,${(m.t + opts.height - m.b) / 2}) rotate(-90)`)
    .attr('text-anchor', 'middle').text('achieved rate (ops/s, log)');
  const roofs = svg.append('g').attr('class', 'roofs');
  if (bw) {   // the slope up to the highest ceiling (or the chart's top without one)
    const xEnd = top > 0 ? top / bw : xHi;
    roofs.append('line').attr('class', 'roof-bandwidth').attr('x1', x(xLo)).attr('y1', y(Math.max(yLo, bw * xLo)))
      .attr('x2', x(Math.min(xEnd, xHi))).attr('y2', y(Math.min(bw * Math.min(xEnd, xHi), yHi)));
    roofs.append('text').attr('class', 'roof-label').attr('x', x(xLo) + 4).attr('y', y(Math.max(yLo, bw * xLo)) - 6)
      .text(`${siText(bw)}B/s`);
  }
  for (const c of d.ceilings) {
    const x0 = bw ? Math.max(xLo, c.opsPerS / bw) : xLo;
    roofs.append('line').attr('class', `roof-ceiling kind-${c.kind}`).attr('stroke', KIND_COLORS[c.kind] ?? '#555')
      .attr('x1', x(x0)).attr('x2', x(xHi)).attr('y1', y(c.opsPerS)).attr('y2', y(c.opsPerS));
    roofs.append('text').attr('class', 'roof-label').attr('x', x(xHi) + 4).attr('y', y(c.opsPerS)).attr('dy', '0.35em')
      .attr('fill', KIND_COLORS[c.kind] ?? '#555').text(c.label);
  }
  const dots = svg.append('g').attr('class', 'points').selectAll('circle').data(d.dots).join('circle')
    .attr('class', 'point').attr('data-node', (p) => p.id).attr('cx', (p) => x(p.x)).attr('cy', (p) => y(p.y)).attr('r', 3.5)
    .attr('fill', (p) => KIND_COLORS[p.kind] ?? '#888')
    .on('click', (_, p) => opts.onClick(p.id));
  dots.append('title').text((p) => p.title);
  return {
    svg: svg.node()!,
    select(id) {
      dots.classed('selected', (p) => p.id === id).attr('r', (p) => (p.id === id ? 7 : 3.5));
      dots.filter((p) => p.id === id).raise();
    },
  };
}
