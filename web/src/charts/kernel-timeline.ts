// Zoomable timeline of one step's kernels, time in µs from the step start. Top lane: one bar per
// node spanning its kernels (neighbouring nodes alternate in shade, names where they fit); then
// one lane per op type with the kernels, coloured by their node's op; kernels without a node in
// their own hatched lane; the GPU's idle gaps in the last lane. Hovering shows a kernel's name,
// node, grid, block, registers, shared memory and duration and lights up its node's other
// kernels; clicking selects the node. Wheel/drag zooms and pans along time. Host-clock node
// spans (CPU traces) use the same chart without the node, unattributed and idle lanes.
import { axisBottom } from 'd3-axis';
import { scaleLinear, scaleOrdinal } from 'd3-scale';
import { schemeTableau10 } from 'd3-scale-chromatic';
import { select } from 'd3-selection';
import { zoom, zoomIdentity, type ZoomTransform } from 'd3-zoom';
import { maxOf, minOf } from '../model/extent';
import { groupByNode, idleGaps, kernelOp, shortKernelName, type IdleGap, type NodeKernels } from '../model/gpu-time';
import type { GraphNode, Kernel } from '../model/types';
import { el } from '../ui/dom';
import { fmtInt, fmtUs } from '../ui/format';

export interface KernelTimelineOptions {
  width: number;
  nodes: GraphNode[];
  selected: number | null;
  onPick: (node: number) => void;
  hostSpans?: boolean;      // the items are host-clock node spans, not GPU kernels
}

export interface KernelTimeline {
  root: HTMLElement;
  select(node: number | null): void;   // outline a node's span and kernels
}

export const UNATTRIBUTED_LANE = 'no node';
const NODE_LANE = 'nodes', IDLE_LANE = 'GPU idle';
let clipCount = 0;

// Lanes top to bottom: nodes, op types (kernelOp: a fused kernel's ops joined) in order of
// first appearance, unattributed, idle.
export function timelineLanes(kernels: readonly Kernel[], nodes: GraphNode[], hostSpans = false): string[] {
  const ops: string[] = [];
  for (const k of [...kernels].sort((a, b) => a.startNs - b.startNs)) {
    if (k.node < 0) continue;
    const op = kernelOp(k, nodes);
    if (!ops.includes(op)) ops.push(op);
  }
  if (hostSpans) return ops;
  return [NODE_LANE, ...ops, ...(kernels.some((k) => k.node < 0) ? [UNATTRIBUTED_LANE] : []), IDLE_LANE];
}

export function kernelTimeline(kernels: Kernel[], o: KernelTimelineOptions): KernelTimeline {
  const { width, nodes } = o;
  const lanes = timelineLanes(kernels, nodes, o.hostSpans);
  const laneOf = (k: Kernel) => (k.node < 0 ? UNATTRIBUTED_LANE : kernelOp(k, nodes));
  const groups: NodeKernels[] = o.hostSpans ? [] : groupByNode(kernels).nodes;
  const gaps: IdleGap[] = o.hostSpans ? [] : idleGaps(kernels);
  const laneH = 20, nodeLaneH = 26, m = { l: Math.min(220, Math.max(96, 7 * maxOf(lanes.map((l) => l.length)) + 14)), r: 10, t: 6, b: 24 };
  const laneY = (name: string) => m.t + (lanes[0] === NODE_LANE && name !== NODE_LANE ? nodeLaneH - laneH : 0) + lanes.indexOf(name) * laneH;
  const height = laneY(lanes[lanes.length - 1]) + laneH + m.b;
  // The kernels' own extent: a CUDA step's first kernel can start milliseconds after the step
  // (host work, the graph launch); the axis still reads time since the step start.
  const first = minOf(kernels.map((k) => k.startNs / 1000)), end = maxOf(kernels.map((k) => (k.startNs + k.durationNs) / 1000));
  const pad = Math.max(0.5, (end - first) * 0.01);
  const x0 = scaleLinear().domain([Math.max(0, first - pad), end + pad]).range([m.l, width - m.r]);
  const ops = lanes.filter((l) => l !== NODE_LANE && l !== UNATTRIBUTED_LANE && l !== IDLE_LANE);
  const color = scaleOrdinal<string, string>(schemeTableau10).domain(ops);
  // A node's span takes the colour of its (first) kernel's lane.
  const kernelColor = (k: Kernel) => color(kernelOp(k, nodes));

  const wrap = el('div', { class: 'kernel-timeline-wrap' });
  const tip = el('div', { class: 'kt-tip', role: 'tooltip' });
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', 'kernel-timeline').attr('width', width).attr('height', height);
  const defs = svg.append('defs');
  const clipId = `kt-clip-${++clipCount}`, hatchId = `kt-hatch-${clipCount}`;
  defs.append('clipPath').attr('id', clipId).append('rect').attr('x', m.l).attr('y', 0).attr('width', width - m.l - m.r).attr('height', height);
  const hatch = defs.append('pattern').attr('id', hatchId).attr('patternUnits', 'userSpaceOnUse').attr('width', 6).attr('height', 6)
    .attr('patternTransform', 'rotate(45)');
  hatch.append('rect').attr('width', 6).attr('height', 6).attr('fill', '#f3d6d6');
  hatch.append('line').attr('x1', 0).attr('y1', 0).attr('x2', 0).attr('y2', 6).attr('stroke', '#c0392b').attr('stroke-width', 3);

  svg.append('g').selectAll('rect').data(lanes).join('rect').attr('class', 'lane-bg')
    .attr('x', m.l).attr('width', width - m.l - m.r).attr('y', (d) => laneY(d)).attr('height', (d) => (d === NODE_LANE ? nodeLaneH : laneH))
    .attr('fill', (_, i) => (i % 2 ? '#fafbfc' : '#f3f5f8'));
  svg.append('g').selectAll('text').data(lanes).join('text').attr('class', (d) => `lane-label${d === UNATTRIBUTED_LANE ? ' unattributed' : ''}`)
    .attr('x', m.l - 6).attr('y', (d) => laneY(d) + (d === NODE_LANE ? nodeLaneH : laneH) / 2).attr('dy', '0.35em').attr('text-anchor', 'end').text((d) => d);
  const body = svg.append('g').attr('clip-path', `url(#${clipId})`);

  const nodeName = (id: number) => nodes[id]?.name ?? `node ${id}`;
  const showTip = (ev: MouseEvent, lines: [string, string][], title: string) => {
    tip.replaceChildren(el('div', { class: 'kt-tip-title', text: title }),
      ...lines.map(([k, v]) => el('div', { class: 'kt-tip-row' }, el('span', { class: 'k', text: k }), el('span', { text: v }))));
    tip.style.display = 'block';
    // Beside the pointer, flipped to stay inside the visible part of the scrolling tab.
    const r = wrap.getBoundingClientRect(), box = (wrap.closest('.tab-body') ?? wrap).getBoundingClientRect();
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tw > box.right) x = ev.clientX - tw - 10;
    if (y + th > box.bottom) y = ev.clientY - th - 10;
    tip.style.left = `${Math.max(box.left, x) - r.left}px`;
    tip.style.top = `${Math.max(box.top, y) - r.top}px`;
  };
  const hideTip = () => { tip.style.display = 'none'; };
  let lit: number | null = null;
  const light = (node: number | null) => {
    if (node === lit) return;   // mousemove fires often; restyle only when the node changes
    lit = node;
    svg.selectAll<SVGRectElement, unknown>('[data-node]').classed('hl', function () { return node !== null && Number(this.dataset.node) === node; });
  };

  const spans = body.append('g').selectAll('rect').data(groups).join('rect').attr('class', 'node-span')
    .attr('data-node', (g) => g.node).attr('y', laneY(NODE_LANE) + 2).attr('height', nodeLaneH - 4)
    .attr('fill', (g) => kernelColor(g.kernels[0])).attr('fill-opacity', (_, i) => (i % 2 ? 0.35 : 0.6))
    .on('mousemove', (e: MouseEvent, g) => { light(g.node); showTip(e, [
      ['op', nodes[g.node]?.op ?? '?'], ['kernels', `${g.kernels.length}: ${g.kernels.map((k) => shortKernelName(k.name)).join(', ')}`],
      ['GPU time', `${fmtUs(g.sumNs / 1000)} (sum of its kernels)`], ['span', `${fmtUs(g.startNs / 1000)} → ${fmtUs(g.endNs / 1000)} after the step start`],
    ], nodeName(g.node)); })
    .on('mouseleave', () => { light(null); hideTip(); })
    .on('click', (_, g) => { o.onPick(g.node); handle.select(g.node); });
  const labels = body.append('g').selectAll('text').data(groups).join('text').attr('class', 'node-span-label')
    .attr('y', laneY(NODE_LANE) + nodeLaneH / 2).attr('dy', '0.35em').text((g) => nodeName(g.node).replace(/^blk\./, ''));

  const kernelLines = (k: Kernel): [string, string][] => {
    const rows: [string, string][] = [
      k.node >= 0 ? ['node', `${nodeName(k.node)} (${nodes[k.node]?.op ?? '?'})`] : ['node', `none — ${k.unattributed ?? 'not attributed'}`],
      ['duration', fmtUs(k.durationNs / 1000)],
      ['start', `${fmtUs(k.startNs / 1000)} after the step start`],
    ];
    if (k.grid.length) rows.push(['grid', `[${k.grid.join(', ')}]`], ['block', `[${k.block.join(', ')}]`],
      ['registers', k.registers === null ? '—' : `${k.registers} per thread`],
      ['shared memory', k.sharedBytes === null ? '—' : `${fmtInt(k.sharedBytes)} B per block`]);
    if (k.covers && k.covers.length > 1) rows.push(['fused: computes', k.covers.map(nodeName).join(', ')]);
    if (k.graphNode !== undefined && k.graphNode !== null) rows.push(['CUDA graph node', String(k.graphNode)]);
    if (shortKernelName(k.name) !== k.name) rows.push(['signature', k.name]);
    return rows;
  };
  const rects = body.append('g').selectAll('rect').data(kernels).join('rect')
    .attr('class', (k) => `kernel${k.node < 0 ? ' unattributed' : ''}`)
    .attr('data-node', (k) => (k.node >= 0 ? k.node : null))
    .attr('y', (k) => laneY(laneOf(k)) + 2).attr('height', laneH - 4)
    .attr('fill', (k) => (k.node < 0 ? `url(#${hatchId})` : kernelColor(k)))
    .on('mousemove', (e: MouseEvent, k) => { light(k.node >= 0 ? k.node : null); showTip(e, kernelLines(k), shortKernelName(k.name)); })
    .on('mouseleave', () => { light(null); hideTip(); })
    .on('click', (_, k) => { if (k.node >= 0) { o.onPick(k.node); handle.select(k.node); } });

  const idle = body.append('g').selectAll('rect').data(gaps).join('rect').attr('class', 'idle-gap')
    .attr('y', laneY(IDLE_LANE) + 4).attr('height', laneH - 8)
    .on('mousemove', (e: MouseEvent, g) => showTip(e, [
      ['after', `${shortKernelName(g.before.name)}${g.before.node >= 0 ? ` (${nodeName(g.before.node)})` : ''}`],
      ['before', `${shortKernelName(g.after.name)}${g.after.node >= 0 ? ` (${nodeName(g.after.node)})` : ''}`],
      ['from', `${fmtUs(g.startNs / 1000)} after the step start`],
    ], `GPU idle for ${fmtUs((g.endNs - g.startNs) / 1000)}`))
    .on('mouseleave', hideTip);

  const axis = svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${height - m.b})`);
  svg.append('text').attr('class', 'axis-label').attr('x', width - m.r).attr('y', height - 2).attr('text-anchor', 'end')
    .text(o.hostSpans ? 'host clock: time since step start (µs)' : 'GPU: time since step start (µs)');
  const draw = (t: ZoomTransform) => {
    const x = t.rescaleX(x0);
    const w = (a: number, b: number) => Math.max(1, x(b / 1000) - x(a / 1000));
    rects.attr('x', (k) => x(k.startNs / 1000)).attr('width', (k) => w(k.startNs, k.startNs + k.durationNs));
    spans.attr('x', (g) => x(g.startNs / 1000)).attr('width', (g) => w(g.startNs, g.endNs));
    idle.attr('x', (g) => x(g.startNs / 1000)).attr('width', (g) => w(g.startNs, g.endNs));
    // A name shows where its bar is wide enough for it (≈ 6 px per character).
    labels.attr('x', (g) => x(g.startNs / 1000) + 3)
      .attr('display', (g) => (w(g.startNs, g.endNs) > 6 * nodeName(g.node).replace(/^blk\./, '').length + 6 ? null : 'none'));
    axis.call(axisBottom(x).ticks(8));
  };
  const z = zoom<SVGSVGElement, unknown>().scaleExtent([1, 5000]).translateExtent([[m.l, 0], [width - m.r, height]])
    .extent([[m.l, 0], [width - m.r, height]]).on('zoom', (e) => { hideTip(); draw(e.transform); });
  svg.call(z).on('dblclick.zoom', null);
  svg.on('dblclick', () => svg.call(z.transform, zoomIdentity));
  draw(zoomIdentity);
  wrap.append(svg.node()!, tip);

  const handle: KernelTimeline = {
    root: wrap,
    select(node) {
      svg.selectAll<SVGRectElement, unknown>('[data-node]').classed('sel', function () { return node !== null && Number(this.dataset.node) === node; });
    },
  };
  handle.select(o.selected);
  return handle;
}
