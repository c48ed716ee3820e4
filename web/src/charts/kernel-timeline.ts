// Zoomable timeline of a step's kernel records: one lane per op type, time in µs from the
// step start. Wheel/drag zooms and pans along time; clicking a kernel selects its node.
import { axisBottom } from 'd3-axis';
import { scaleLinear, scaleOrdinal } from 'd3-scale';
import { schemeTableau10 } from 'd3-scale-chromatic';
import { select } from 'd3-selection';
import { zoom, zoomIdentity, type ZoomTransform } from 'd3-zoom';
import type { GraphNode, Kernel } from '../model/types';
import { fmtUs } from '../ui/format';

let clipCount = 0;

export function kernelTimeline(kernels: Kernel[], nodes: GraphNode[], width: number, onPick: (node: number) => void): SVGSVGElement {
  const ops = [...new Set(kernels.map((k) => nodes[k.node]?.op ?? 'other'))];
  const laneH = 20, m = { l: 80, r: 10, t: 6, b: 24 };
  const height = m.t + ops.length * laneH + m.b;
  const end = Math.max(1, ...kernels.map((k) => (k.startNs + k.durationNs) / 1000));
  const x0 = scaleLinear().domain([0, end]).range([m.l, width - m.r]);
  const color = scaleOrdinal<string, string>(schemeTableau10).domain(ops);
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', 'kernel-timeline').attr('width', width).attr('height', height);
  const clipId = `kt-clip-${++clipCount}`;
  svg.append('clipPath').attr('id', clipId).append('rect').attr('x', m.l).attr('y', 0).attr('width', width - m.l - m.r).attr('height', height);
  svg.append('g').selectAll('text').data(ops).join('text').attr('class', 'lane-label')
    .attr('x', m.l - 6).attr('y', (_, i) => m.t + i * laneH + laneH / 2).attr('dy', '0.35em').attr('text-anchor', 'end').text((d) => d);
  const body = svg.append('g').attr('clip-path', `url(#${clipId})`);
  const rects = body.selectAll('rect').data(kernels).join('rect').attr('class', 'kernel')
    .attr('y', (k) => m.t + ops.indexOf(nodes[k.node]?.op ?? 'other') * laneH + 2).attr('height', laneH - 4)
    .attr('fill', (k) => color(nodes[k.node]?.op ?? 'other'))
    .on('click', (_, k) => onPick(k.node));
  rects.append('title').text((k) => `${k.name} — node ${nodes[k.node]?.name ?? k.node}\nstart ${fmtUs(k.startNs / 1000)}, ` +
    `duration ${fmtUs(k.durationNs / 1000)}` + (k.grid.length ? `\ngrid [${k.grid.join(', ')}], block [${k.block.join(', ')}], ` +
    `${k.registers ?? '—'} registers/thread, ${k.sharedBytes ?? '—'} B shared memory` : ''));
  const axis = svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${height - m.b})`);
  svg.append('text').attr('class', 'axis-label').attr('x', width - m.r).attr('y', height - 2).attr('text-anchor', 'end').text('time since step start (µs)');
  const draw = (t: ZoomTransform) => {
    const x = t.rescaleX(x0);
    rects.attr('x', (k) => x(k.startNs / 1000)).attr('width', (k) => Math.max(1, x((k.startNs + k.durationNs) / 1000) - x(k.startNs / 1000)));
    axis.call(axisBottom(x).ticks(8));
  };
  const z = zoom<SVGSVGElement, unknown>().scaleExtent([1, 2000]).translateExtent([[m.l, 0], [width - m.r, height]])
    .extent([[m.l, 0], [width - m.r, height]]).on('zoom', (e) => draw(e.transform));
  svg.call(z);
  draw(zoomIdentity);
  return svg.node()!;
}
