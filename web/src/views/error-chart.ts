// Error accumulation along the graph for one step: each compared node in execution order, its
// full-tensor error (what it inherits plus what it adds) as a line, its local error (what it
// adds itself, paired traces) as open markers, other steps as faint lines, the layers as bands.
import { scaleLinear, scaleLog } from 'd3-scale';
import { select } from 'd3-selection';
import { line } from 'd3-shape';
import { SQNR_CAP_DB, type CompareStep, type Comparison } from '../model/compare';
import type { TraceGraph } from '../model/types';
import { errorFill } from './error-scale';
import { fmtDb, fmtNum } from '../ui/format';

export type ChartMode = 'db' | 'rel';

const TOP_DB = 80;   // identical and near-identical nodes sit at the top edge

interface Point { x: number; id: number; name: string; layer: number; full: number | null; local: number | null }

// The chart's values: SQNR in dB, or relative error (10^(−dB/20), the same information).
function value(mode: ChartMode, db: number | null, rel: number | null): number | null {
  if (mode === 'rel') {
    if (rel !== null) return rel;
    return db === null ? null : Number.isFinite(db) ? 10 ** (-db / 20) : 0;
  }
  return db;
}

export function points(step: CompareStep, graph: TraceGraph, mode: ChartMode): Point[] {
  const out: Point[] = [];
  for (const n of graph.nodes) {
    const c = step.nodes.get(n.id);
    if (!c) continue;
    out.push({ x: out.length, id: n.id, name: n.name, layer: n.layer,
               full: value(mode, c.sqnrDb, c.relL2), local: c.local ? value(mode, c.local.sqnrDb, c.local.relL2) : null });
  }
  return out;
}

export function errorChart(cmp: Comparison, stepIndex: number, graphOf: (step: number) => TraceGraph, mode: ChartMode,
                           width: number, onPick: (step: number, node: number) => void): SVGSVGElement {
  const H = 220, M = { l: 54, r: 12, t: 10, b: 34 };
  const cur = cmp.steps.find((s) => s.index === stepIndex);
  const pts = cur ? points(cur, graphOf(stepIndex), mode) : [];
  const svg = select(document.createElementNS('http://www.w3.org/2000/svg', 'svg'))
    .attr('class', 'error-chart').attr('width', width).attr('height', H).attr('data-mode', mode);
  const x = scaleLinear().domain([0, Math.max(1, pts.length - 1)]).range([M.l, width - M.r]);
  const relFloor = 1e-4;
  const y = mode === 'db'
    ? scaleLinear().domain([Math.min(0, ...pts.flatMap((p) => [p.full ?? TOP_DB, p.local ?? TOP_DB]).filter(Number.isFinite)), TOP_DB]).range([H - M.b, M.t]).clamp(true)
    : scaleLog().domain([relFloor, Math.max(1, ...pts.map((p) => p.full ?? 0))]).range([H - M.b, M.t]).clamp(true);
  const yv = (v: number) => (mode === 'db' ? y(Math.min(TOP_DB, v)) : y(Math.max(relFloor, v)));
  // Layer bands and labels.
  let start = 0;
  for (let i = 1; i <= pts.length; i++) {
    if (i < pts.length && pts[i].layer === pts[start].layer) continue;
    const l = pts[start].layer;
    if (l >= 0) {
      svg.append('rect').attr('class', 'layer-band').attr('x', x(start) - 2).attr('width', Math.max(1, x(i - 1) - x(start) + 4))
        .attr('y', M.t).attr('height', H - M.t - M.b).attr('fill', l % 2 ? '#f3f5f8' : '#e9edf3');
      if (x(i - 1) - x(start) > 14) svg.append('text').attr('class', 'layer-label').attr('x', (x(start) + x(i - 1)) / 2).attr('y', H - M.b + 12)
        .attr('text-anchor', 'middle').text(`L${l}`);
    }
    start = i;
  }
  // Threshold, axis ticks.
  const ticks = mode === 'db' ? [0, 10, 20, 30, 40, 60, 80] : [1e-4, 1e-3, 1e-2, 0.0316, 0.1, 1];
  for (const t of ticks) {
    if (mode === 'db' && t < (y.domain()[0] as number)) continue;
    svg.append('line').attr('class', 'grid-line').attr('x1', M.l).attr('x2', width - M.r).attr('y1', yv(t)).attr('y2', yv(t));
    svg.append('text').attr('class', 'axis-label').attr('x', M.l - 4).attr('y', yv(t)).attr('dy', '0.35em').attr('text-anchor', 'end')
      .text(mode === 'db' ? `${t === TOP_DB ? '≥' : ''}${t} dB` : fmtNum(t, 2));
  }
  const thr = mode === 'db' ? cmp.threshold.value : 10 ** (-cmp.threshold.value / 20);
  svg.append('line').attr('class', 'threshold-line').attr('x1', M.l).attr('x2', width - M.r).attr('y1', yv(thr)).attr('y2', yv(thr));
  svg.append('text').attr('class', 'axis-note').attr('x', width - M.r).attr('y', yv(thr) - 3).attr('text-anchor', 'end')
    .text(`threshold ${cmp.threshold.value} dB`);
  svg.append('text').attr('class', 'axis-note').attr('x', M.l).attr('y', H - 4)
    .text(`nodes of step ${stepIndex} in execution order →   (faint: the other steps${mode === 'db' ? `; top edge: ${TOP_DB} dB or more, exact included` : ''})`);
  // Other steps, faint: aligned by node name.
  const xByName = new Map(pts.map((p) => [p.name, p.x]));
  const path = line<[number, number]>().x((d) => x(d[0])).y((d) => yv(d[1]));
  for (const s of cmp.steps) {
    if (s.index === stepIndex || !s.inputsAgree) continue;
    const other = points(s, graphOf(s.index), mode).filter((p) => p.full !== null && xByName.has(p.name))
      .map((p) => [xByName.get(p.name)!, p.full!] as [number, number]);
    svg.append('path').attr('class', 'other-step').attr('d', path(other) ?? '');
  }
  // This step: full-tensor line with coloured dots, local error as open markers.
  const full = pts.filter((p) => p.full !== null).map((p) => [p.x, p.full!] as [number, number]);
  svg.append('path').attr('class', 'full-line').attr('d', path(full) ?? '');
  const dbOf = (v: number) => (mode === 'db' ? v : v <= 0 ? Infinity : -20 * Math.log10(v));
  const g = svg.append('g');
  for (const p of pts) {
    const pick = () => onPick(stepIndex, p.id);
    if (p.local !== null) {
      g.append('path').attr('class', 'local-mark').attr('data-id', p.id)
        .attr('d', `M${x(p.x) - 4},${yv(p.local) - 4}h8v8h-8z`).attr('fill', 'none').attr('stroke', errorFill('db', dbOf(p.local)))
        .on('click', pick).append('title').text(`${p.name}: local error (the node's own) ${label(mode, p.local)}`);
    }
    if (p.full !== null) {
      g.append('circle').attr('class', 'full-dot').attr('data-id', p.id).attr('cx', x(p.x)).attr('cy', yv(p.full)).attr('r', 3.2)
        .attr('fill', errorFill('db', dbOf(p.full))).on('click', pick)
        .append('title').text(`${p.name}: full tensor ${label(mode, p.full)}${p.local !== null ? `, local ${label(mode, p.local)}` : ''}`);
    }
  }
  return svg.node()!;
}

function label(mode: ChartMode, v: number): string {
  if (mode === 'rel') return `relative error ${fmtNum(v, 3)}`;
  return v >= SQNR_CAP_DB ? 'identical' : fmtDb(v);
}
