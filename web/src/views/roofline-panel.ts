// The Roofline tab (CUDA traces): the step's kernel groups on a log-log roofline (chart linked to
// the graph: a click selects the node, the selected node's point is ringed), the roofs in words
// (measured or nominal bandwidth, the device's peaks or why there are none) and the worst nodes
// by GPU time lost against their roof.
import { KIND_COLORS, rooflineChart, siText, type RooflineChart } from '../charts/roofline-chart';
import { roofsNote, traceRoofs, peakOpsPerS } from '../model/device-roofs';
import { whyNoKernels } from '../model/gpu-time';
import { OPS_KINDS } from '../model/node-work';
import { intensity, stepRoofline, worstPoints, type RooflinePoint } from '../model/roofline';
import type { Step, Trace } from '../model/types';
import { clear, el } from '../ui/dom';
import { fmtUs } from '../ui/format';

const WORST_ROWS = 12;

export class RooflinePanel {
  readonly root = el('div', { class: 'roofline-panel' });
  private chart: RooflineChart | null = null;
  private points: RooflinePoint[] = [];
  private selected: number | null = null;
  private key: unknown = null;

  constructor(private onPick: (node: number) => void) {}

  // The node selected in the graph: its group's point is ringed.
  select(node: number | null): void {
    this.selected = node;
    const p = node === null ? null : this.points.find((q) => q.nodes.includes(node));
    this.chart?.select(p ? p.node : null);
    this.root.querySelectorAll<HTMLElement>('tr[data-node]').forEach((r) => r.classList.toggle('on', p !== null && p !== undefined && Number(r.dataset.node) === p.node));
  }

  update(t: Trace, step: Step): void {
    if (this.key === step.kernels) return;
    this.key = step.kernels;
    clear(this.root);
    this.chart = null;
    const roofs = traceRoofs(t.meta);
    this.root.append(el('div', { class: 'roofline-roofs muted', text: `Roofs: ${roofsNote(roofs, t.meta.device)}` }));
    this.points = stepRoofline(t, step);
    if (!this.points.length) {
      this.root.append(el('p', { class: 'muted roofline-none', text: whyNoKernels(t, step) }));
      return;
    }
    const nodes = t.graphs.get(step.graphId)?.nodes ?? [];
    const name = (p: RooflinePoint) => `${nodes[p.node]?.name ?? `#${p.node}`}${p.nodes.length > 1 ? ` (+${p.nodes.length - 1} fused)` : ''}`;
    const ops = (p: RooflinePoint) => [...new Set(p.nodes.filter((id) => (nodes[id]?.fusedInto ?? -1) < 0).map((id) => nodes[id]?.op ?? '?'))].join('+');
    const drawn = this.points.filter((p) => p.ops > 0 && p.gpuUs > 0);
    const rate = (p: RooflinePoint) => p.ops / (p.gpuUs * 1e-6);
    const chart = rooflineChart({
      dots: drawn.map((p) => ({ id: p.node, x: intensity(p), y: rate(p), kind: p.kind,
        title: `${name(p)} (${ops(p)}): ${siText(p.bytes)}B, ${siText(p.ops)} ops (${p.kind}), ${intensity(p).toPrecision(3)} ops/B, ${fmtUs(p.gpuUs)}, ` +
          `${siText(p.bytes / (p.gpuUs * 1e-6))}B/s, ${siText(rate(p))}ops/s${p.fraction !== null ? `, ${(100 * p.fraction).toFixed(1)} % of roof (${p.bandwidthBound ? 'memory' : 'compute'}-bound)` : ''}` })),
      bandwidthBytesPerS: roofs.bandwidthGbs === null ? null : roofs.bandwidthGbs * 1e9,
      ceilings: OPS_KINDS.flatMap((k) => {
        const peak = peakOpsPerS(roofs, k);
        return peak === null ? [] : [{ kind: k, label: `${k} ${siText(peak)}ops/s`, opsPerS: peak }];
      }),
    }, { width: 640, height: 300, onClick: (id) => this.onPick(id) });
    this.chart = chart;
    const legend = el('div', { class: 'roofline-legend' },
      ...OPS_KINDS.map((k) => el('span', { class: 'legend-swatch' }, el('span', { class: 'sw', style: `background:${KIND_COLORS[k]}` }), `${k} ops`)),
      el('span', { class: 'muted', text: `${drawn.length} points${drawn.length < this.points.length ? ` (${this.points.length - drawn.length} without arithmetic, e.g. copies and gathers, are in the table only)` : ''}; click a point to select its node` }));
    this.root.append(el('div', { class: 'roofline-body' }, el('div', {}, chart.svg, legend), this.worstTable(worstPoints(this.points, WORST_ROWS), name, ops)));
    this.select(this.selected);
  }

  private worstTable(rows: RooflinePoint[], name: (p: RooflinePoint) => string, ops: (p: RooflinePoint) => string): HTMLElement {
    const pct = (p: RooflinePoint) => (p.fraction === null ? '—' : `${(100 * p.fraction).toFixed(1)} %`);
    const head = el('tr', {}, ...['node', 'op', 'GPU', 'GB/s', 'TOPS', '% of roof', 'lost', 'bound'].map((h) => el('th', { text: h })));
    const body = rows.map((p) => {
      const s = p.gpuUs * 1e-6;
      const tr = el('tr', { 'data-node': p.node, class: 'clickable' },
        el('td', { text: name(p) }), el('td', { text: ops(p) }), el('td', { class: 'num', text: fmtUs(p.gpuUs) }),
        el('td', { class: 'num', text: (p.bytes / s / 1e9).toFixed(0) }), el('td', { class: 'num', text: (p.ops / s / 1e12).toFixed(2) }),
        el('td', { class: 'num', text: pct(p) }), el('td', { class: 'num', text: p.lostUs === null ? '—' : fmtUs(p.lostUs) }),
        el('td', { text: p.roofUs === null ? '—' : p.bandwidthBound ? 'memory' : 'compute' }));
      tr.addEventListener('click', () => this.onPick(p.node));
      return tr;
    });
    return el('div', { class: 'roofline-worst' }, el('h4', { text: 'Worst nodes by GPU time lost against their roof (this step)' }),
      el('table', { class: 'roofline-table' }, el('thead', {}, head), el('tbody', {}, ...body)));
  }
}
