// The node inspector: what the node is, its statistics at the current step, the value grid as
// a heatmap, the histogram, its neighbours (with a back stack) and its kernels.
import { heatmap } from '../charts/heatmap';
import { histogram } from '../charts/histogram';
import type { ValueScaleMode } from '../charts/color-scales';
import type { CompareNode, MetricsSource } from '../model/compare';
import { fusedInto, shortKernelName } from '../model/gpu-time';
import { minOf } from '../model/extent';
import { actScalesTable, diffTable, outliersTable, pairedHeatmaps } from './compare-details';
import type { NodeRecord, Step, Trace, TraceGraph } from '../model/types';
import { clear, el, kvTable, section } from '../ui/dom';
import { fmtInt, fmtNum, fmtUs } from '../ui/format';
import { cachedWidth } from '../ui/measure';

export interface InspectorInput {
  trace: Trace; step: Step; graph: TraceGraph; node: number;
  other: { trace: Trace; step: Step | null; diff: CompareNode | null; source: MetricsSource; refIsA: boolean } | null;   // comparison mode: trace B
  canGoBack: boolean;
}

export class Inspector {
  readonly root = el('aside', { class: 'inspector' });
  private mode: ValueScaleMode = 'symlog';
  private last: InspectorInput | null = null;

  constructor(private onNavigate: (id: number) => void, private onBack: () => void) {
    this.empty();
  }

  empty(): void {
    clear(this.root);
    this.root.append(el('div', { class: 'inspector-empty' },
      el('h2', { text: 'Node inspector' }),
      el('p', { text: 'Click a node in the graph (or use ← / → to walk the nodes in execution order) to see its statistics, value heatmap, histogram and neighbours.' })));
  }

  // Other content (a pipeline stage's details).
  custom(content: HTMLElement): void {
    this.last = null;
    clear(this.root);
    this.root.append(content);
  }

  render(input: InspectorInput): void {
    this.last = input;
    const { trace, step, graph, node } = input;
    const n = graph.nodes[node];
    const rec = step.records.get(node) ?? null;
    clear(this.root);
    const width = Math.max(280, cachedWidth(this.root, 440) - 28);
    const back = el('button', { class: 'back', title: 'back to the previously inspected node (Backspace)', disabled: !input.canGoBack, text: '← back' });
    back.addEventListener('click', () => this.onBack());
    this.root.append(el('div', { class: 'inspector-head' }, back,
      el('h2', { class: 'node-title', text: n.name }),
      el('span', { class: 'badge', text: n.op }),
      el('span', { class: 'step-badge', text: `step ${step.index} (${step.phase})` })));

    const props: [string, string | Node][] = [
      ['op', n.op], ['shape', `[${n.shape.join(' × ')}] (token rows × features)`], ['dtype', n.dtype],
      ['layer', n.layer >= 0 ? String(n.layer) : '— (outside the blocks)'],
      ['weight', n.weight ? `${n.weight} (${n.weightType ?? 'type ?'})` : '—'],
      ['bias', n.bias ?? '—'],
      ['fused from', n.fusedFrom.length ? n.fusedFrom.join(', ') : '—'],
    ];
    if (n.fusedInto >= 0) props.push(['fused into', link(graph, n.fusedInto, this.onNavigate)]);
    if (!n.hasOutput) props.push(['output', 'none (no tensor to observe)']);
    this.root.append(section('Node', kvTable(props)));

    this.root.append(section(`Statistics — step ${step.index}`, statsTable(rec, input.other?.step?.records.get(node) ?? null, trace, input.other?.trace ?? null)));
    if (input.other?.diff) this.root.append(section(`Difference A vs ${input.other.refIsA ? 'reference A' : 'reference B'}`, diffTable(input.other.diff, input.other.source)));

    const recB = input.other?.step?.records.get(node) ?? null;
    const labels: [string, string] = input.other ? [`A: ${trace.meta.matmulPath || trace.name}`, `B: ${input.other.trace.meta.matmulPath || input.other.trace.name}`] : ['', ''];
    const grids = rec?.grid || recB?.grid ? [true] : [];
    if (grids.length) {
      const toggle = el('select', { class: 'scale-mode', title: 'colour scale of the heatmap' },
        el('option', { value: 'symlog', text: 'symmetric-log scale', selected: this.mode === 'symlog' }),
        el('option', { value: 'quantile', text: '99th-percentile clipped scale', selected: this.mode === 'quantile' }));
      toggle.addEventListener('change', () => { this.mode = toggle.value as ValueScaleMode; if (this.last) this.render(this.last); });
      const maps = input.other ? pairedHeatmaps(rec, recB, labels, input.other.refIsA, this.mode, width)
        : [heatmap(rec!.grid!, { width, mode: this.mode, fullMaxAbs: rec?.stats ? Math.max(Math.abs(rec.stats.min), Math.abs(rec.stats.max)) : 0 })];
      this.root.append(section('Values (heatmap of the sampled grid)', toggle, ...maps));
    } else {
      this.root.append(section('Values', el('p', { class: 'muted', text: rec?.noOutput ? `No output tensor (${rec.noOutput}).` :
        rec ? 'No value grid recorded (stats-only trace).' : 'This node was not recorded at this step.' })));
    }
    if (rec?.hist) this.root.append(section('Histogram', histogram(rec.hist, width)));
    const outliers = rec ? outliersTable(rec, recB, input.other ? labels : ['value', 'B']) : null;
    if (outliers) this.root.append(section('Outlier channels (largest |x|, full tensor)', outliers));
    if (rec?.actScales) this.root.append(section('MMQ activation block scales (int8 input of this matmul)', actScalesTable(rec.actScales)));

    const up = n.src.map((s) => link(graph, s, this.onNavigate));
    const down = graph.consumers[node].map((s) => link(graph, s, this.onNavigate));
    this.root.append(section('Neighbours',
      el('div', { class: 'links' }, el('span', { class: 'muted', text: 'upstream: ' }), ...(up.length ? up : [el('span', { text: '—' })])),
      el('div', { class: 'links' }, el('span', { class: 'muted', text: 'downstream: ' }), ...(down.length ? down : [el('span', { text: '—' })]))));

    const kernels = step.kernels.filter((k) => k.node === node);
    if (kernels.length) {
      const t = el('table', { class: 'grid-table' }, el('tr', {}, ...['kernel', 'duration', 'grid', 'block', 'regs', 'shared'].map((h) => el('th', { text: h }))));
      for (const k of kernels)
        t.append(el('tr', {}, el('td', { text: shortKernelName(k.name), title: k.name }), el('td', { text: fmtUs(k.durationNs / 1000) }), el('td', { text: k.grid.join('×') }),
          el('td', { text: k.block.join('×') }), el('td', { text: k.registers === null ? '—' : `${k.registers}/thread` }),
          el('td', { text: k.sharedBytes === null ? '—' : `${fmtInt(k.sharedBytes)} B` })));
      const first = minOf(kernels.map((k) => k.startNs)) / 1000;
      this.root.append(section(`Kernels (${kernels.length}, ${fmtUs(kernels.reduce((a, k) => a + k.durationNs, 0) / 1000)} total, first at ${fmtUs(first)} into the step)`, t));
    } else if (fusedInto(step, node).length) {
      const k = fusedInto(step, node)[0];
      this.root.append(section('Kernels', el('p', { class: 'fused-kernel' }, `Computed inside the fused kernel ${shortKernelName(k.name)} (${fmtUs(k.durationNs / 1000)}), whose time counts for `,
        link(graph, k.node, this.onNavigate), '.')));
    } else if (trace.meta.backend === 'cuda') {
      this.root.append(section('Kernels', el('p', { class: 'muted', text: 'No kernel records for this node at this step.' })));
    }
  }
}

function link(graph: TraceGraph, id: number, go: (id: number) => void): HTMLElement {
  const a = el('a', { href: '#', class: 'node-link', 'data-id': id, text: graph.nodes[id]?.name ?? `#${id}` });
  a.addEventListener('click', (e) => { e.preventDefault(); go(id); });
  return a;
}

function statsTable(a: NodeRecord | null, b: NodeRecord | null, ta: Trace, tb: Trace | null): HTMLElement {
  if (!a?.stats && !b?.stats)
    return el('p', { class: 'muted', text: a?.noOutput ? `No statistics: ${a.noOutput === 'kv_store' ? 'kv_store writes the cache and has no output tensor' : `no output (${a.noOutput})`}.` +
      (a.timeUs !== null ? ` Time: ${fmtUs(a.timeUs)}.` : '') : 'Not recorded at this step.' });
  const rows: [string, (r: NodeRecord | null) => string][] = [
    ['min', (r) => fmtNum(r?.stats?.min, 5)], ['max', (r) => fmtNum(r?.stats?.max, 5)], ['mean', (r) => fmtNum(r?.stats?.mean, 5)],
    ['mean |x|', (r) => fmtNum(r?.stats?.absmean, 5)], ['std', (r) => fmtNum(r?.stats?.std, 5)],
    ['count', (r) => (r?.stats?.count === null || r?.stats?.count === undefined ? '—' : `${fmtInt(r.stats.count)} values`)],
    ['NaN', (r) => `${fmtInt(r?.stats?.nan)} values`], ['Inf', (r) => `${fmtInt(r?.stats?.inf)} values`],
    ['time', (r) => fmtUs(r?.timeUs)],
  ];
  // CUDA traces: the sum of the node's kernels (the host clock has no per-node time inside a CUDA graph).
  if (a?.gpuUs != null || b?.gpuUs != null) rows.push(['GPU time', (r) => fmtUs(r?.gpuUs)]);
  const t = el('table', { class: 'stats-table' });
  t.append(el('tr', {}, el('th', { text: 'statistic' }), el('th', { text: tb ? `A (${ta.meta.matmulPath || ta.name})` : 'value' }),
    tb ? el('th', { text: `B (${tb.meta.matmulPath || tb.name})` }) : null));
  for (const [name, f] of rows) {
    const tr = el('tr', { 'data-stat': name }, el('th', { text: name }), el('td', { text: f(a) }), tb ? el('td', { text: f(b) }) : null);
    if ((name === 'NaN' || name === 'Inf') && ((a?.stats?.[name === 'NaN' ? 'nan' : 'inf'] ?? 0) > 0)) tr.classList.add('bad');
    t.append(tr);
  }
  return el('div', {}, t, el('div', { class: 'legend-note', text: 'Values in activation units (the tensor\'s own scale); statistics over finite values.' }));
}
