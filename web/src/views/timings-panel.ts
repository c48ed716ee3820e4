// Timings of the current step. CUDA traces with kernel records: the step's GPU span, busy time,
// idle gaps, host time and lost CUPTI records, GPU time per op type and per node, the largest
// idle gaps, and the same figures for every step (a table; click a row to go there). Traces with
// host times per node (cpu): time per op type and the slowest nodes. The Timeline tab
// (kernelsRoot) draws the step's kernels, or the host-clock node spans when there are none.
import { barChart } from '../charts/bar-chart';
import { kernelTimeline, type KernelTimeline } from '../charts/kernel-timeline';
import { gpuTimePerOp, idleGaps, nodeGpuUs, shortKernelName, stepGpu, traceHasGpuTimes, whyNoKernels, type StepGpu } from '../model/gpu-time';
import type { Kernel, Step, Trace, TraceGraph } from '../model/types';
import { clear, el } from '../ui/dom';
import { fmtInt, fmtMs, fmtUs } from '../ui/format';
import { cachedWidth } from '../ui/measure';

export class TimingsPanel {
  readonly root = el('div', { class: 'timings-panel' });
  readonly kernelsRoot = el('div', { class: 'kernels-panel' });
  private timeline: KernelTimeline | null = null;
  private selected: number | null = null;

  constructor(private onNode: (id: number) => void, private onStep: (index: number) => void = () => {}) {}

  // The node selected in the graph: outlined in the timeline.
  selectNode(id: number | null): void {
    this.selected = id;
    this.timeline?.select(id);
  }

  update(t: Trace, step: Step): void {
    clear(this.root);
    const g = t.graphs.get(step.graphId)!;
    const w = Math.max(320, Math.floor(cachedWidth(this.root, 900) / 2) - 24);
    const gpu = traceHasGpuTimes(t);
    if (gpu) this.gpuSection(t, step, g, w);
    const host = this.hostSection(step, g, w);
    if (host) this.root.append(host);
    else if (!gpu) this.root.append(el('p', { class: 'muted', text: 'This trace has no per-node times.' }));
    this.updateTimeline(t, step, g);
  }

  private gpuSection(t: Trace, step: Step, g: TraceGraph, w: number): void {
    const s = stepGpu(step);
    this.root.append(el('div', { class: 'timings-head gpu-head' }, `Step ${step.index} (${step.phase}) on the GPU: `, ...gpuChips(s)));
    if (!s.kernels) this.root.append(el('p', { class: 'muted no-kernels', text: whyNoKernels(t, step) }));
    else {
      const ops = gpuTimePerOp(step, g.nodes);
      const total = ops.reduce((a, [, us]) => a + us, 0);
      const perNode = g.nodes.map((n) => ({ id: n.id, us: nodeGpuUs(step, n.id) })).filter((x): x is { id: number; us: number } => x.us !== null)
        .sort((a, b) => b.us - a.us).slice(0, 15);
      const gaps = idleGaps(step.kernels).sort((a, b) => (b.endNs - b.startNs) - (a.endNs - a.startNs)).slice(0, 6);
      const name = (k: Kernel) => (k.node >= 0 ? g.nodes[k.node]?.name ?? `node ${k.node}` : `${shortKernelName(k.name)} (no node)`);
      this.root.append(el('div', { class: 'two-col' },
        el('div', {}, el('h4', { text: 'GPU time per op type (µs, share of kernel time)' }),
          barChart(ops.map(([op, us]) => ({ label: op, value: us, text: `${fmtUs(us)} · ${((us / total) * 100).toFixed(1)} %`, highlight: op.startsWith('(') })),
            { width: w, labelWidth: 172, textWidth: 130, cls: 'gpu-ops' })),   // fits "rms_norm+matmul+swiglu"
        el('div', {}, el('h4', { text: 'Slowest 15 nodes on the GPU (µs, sum of their kernels; click to inspect)' }),
          barChart(perNode.map((n) => ({ label: g.nodes[n.id].name, value: n.us, text: fmtUs(n.us), onClick: () => this.onNode(n.id) })),
            { width: w, labelWidth: 150, color: '#e15759', cls: 'gpu-nodes' }))),
      el('div', { class: 'idle-gaps' }, el('h4', { text: `Largest idle gaps (of ${fmtInt(s.gaps)}; GPU idle between two kernels)` }),
        gaps.length ? el('ol', {}, ...gaps.map((x) => {
          const li = el('li', { class: 'gap', title: 'click to inspect the node that waited' },
            el('b', { text: fmtUs((x.endNs - x.startNs) / 1000) }), ` after ${name(x.before)}, before ${name(x.after)} (at ${fmtUs(x.startNs / 1000)})`);
          if (x.after.node >= 0) li.addEventListener('click', () => this.onNode(x.after.node));
          return li;
        })) : el('p', { class: 'muted', text: 'No gaps: the kernels ran back to back.' })));
    }
    this.root.append(this.stepTable(t, step));
  }

  // Every step's GPU figures; the current step highlighted. Rows are steps, click goes there.
  private stepTable(t: Trace, cur: Step): HTMLElement {
    const head = ['step', 'phase', 'wall', 'host enqueue', 'GPU span', 'GPU events', 'busy', 'idle', 'gaps', 'kernels', 'no node', 'dropped', 'note'];
    const table = el('table', { class: 'grid-table gpu-steps' }, el('tr', {}, ...head.map((h) => el('th', { text: h }))));
    for (const st of t.steps) {
      const s = stepGpu(st);
      const tr = el('tr', { 'data-step': st.index, class: `${st.index === cur.index ? 'current' : ''}${s.dropped ? ' dropped' : ''}` },
        el('td', { text: String(st.index) }), el('td', { text: st.phase }), el('td', { text: fmtMs(s.wallMs) }), el('td', { text: fmtMs(s.hostMs) }),
        el('td', { text: fmtMs(s.gpuMs) }), el('td', { text: fmtMs(s.eventMs) }), el('td', { text: fmtMs(s.busyMs) }), el('td', { text: fmtMs(s.idleMs) }),
        el('td', { text: s.kernels ? fmtInt(s.gaps) : '—' }), el('td', { text: fmtInt(s.kernels) }), el('td', { text: fmtInt(s.unattributed) }),
        el('td', { class: 'dropped', text: s.dropped === null ? '—' : fmtInt(s.dropped) }), el('td', { class: 'note', text: s.note ?? '' }));
      tr.addEventListener('click', () => this.onStep(st.index));
      table.append(tr);
    }
    const cupti = t.meta.cupti;
    const note = cupti ? (cupti.enabled ? `CUPTI kernel records on steps ${cupti.steps ?? 'all'}` +
      (cupti.otherSteps === 'events' ? '; the other steps timed with CUDA events (GPU span only)' : '') : `CUPTI off: ${cupti.reason ?? 'no reason given'}`) : '';
    return el('div', { class: 'gpu-steps-wrap' },
      el('h4', { text: 'All steps (GPU span = first kernel start to last kernel end, or the CUDA events\' span without kernel records; busy = union of the kernel intervals; idle = span − busy; host enqueue = host time launching the step; click a row to go there)' }),
      note ? el('div', { class: 'legend-note cupti-note', text: note }) : null,
      el('div', { class: 'gpu-steps-scroll' }, table));
  }

  // Host-clock times per node (cpu; a CUDA run without graph replay may have them too).
  private hostSection(step: Step, g: TraceGraph, w: number): HTMLElement | null {
    const perOp = new Map<string, number>();
    const perNode: { id: number; us: number }[] = [];
    for (const r of step.records.values()) {
      if (r.timeUs === null) continue;
      const op = g.nodes[r.id].op;
      perOp.set(op, (perOp.get(op) ?? 0) + r.timeUs);
      perNode.push({ id: r.id, us: r.timeUs });
    }
    if (perNode.length === 0) return null;
    const total = [...perOp.values()].reduce((a, b) => a + b, 0);
    const ops = [...perOp.entries()].sort((a, b) => b[1] - a[1]);
    const nodes = perNode.sort((a, b) => b.us - a.us).slice(0, 15);
    return el('div', { class: 'host-times' },
      el('div', { class: 'timings-head', text: `Step ${step.index} (${step.phase}): wall time ${fmtMs(step.timeMs)}; sum of node times ${fmtUs(total)} (host clock)` }),
      el('div', { class: 'two-col' },
        el('div', {}, el('h4', { text: 'Time per op type (µs, share of node time)' }),
          barChart(ops.map(([op, us]) => ({ label: op, value: us, text: `${fmtUs(us)} · ${((us / total) * 100).toFixed(1)} %` })), { width: w, labelWidth: 90, textWidth: 130 })),
        el('div', {}, el('h4', { text: 'Slowest 15 nodes (µs, click to inspect)' }),
          barChart(nodes.map((n) => ({ label: g.nodes[n.id].name, value: n.us, text: fmtUs(n.us), onClick: () => this.onNode(n.id) })),
            { width: w, labelWidth: 150, color: '#f28e2b' }))));
  }

  private updateTimeline(t: Trace, step: Step, g: TraceGraph): void {
    clear(this.kernelsRoot);
    this.timeline = null;
    const width = Math.max(600, cachedWidth(this.kernelsRoot, 1100) - 20);
    if (step.kernels.length) {
      const s = stepGpu(step);
      this.timeline = kernelTimeline(step.kernels, { width, nodes: g.nodes, selected: this.selected, onPick: this.onNode });
      this.kernelsRoot.append(
        el('div', { class: 'timings-head gpu-head' }, `Step ${step.index} (${step.phase}): `, ...gpuChips(s)),
        el('div', { class: 'kt-legend' },
          el('span', {}, el('span', { class: 'sw node' }), 'node: spans its kernels'),
          el('span', {}, el('span', { class: 'sw hatch' }), 'kernel without a node'),
          el('span', {}, el('span', { class: 'sw idle' }), 'GPU idle'),
          el('span', { class: 'muted', text: 'Hover for details, click to inspect the node; scroll to zoom, drag to pan, double-click to reset.' })),
        this.timeline.root);
      return;
    }
    this.kernelsRoot.append(el('p', { class: 'muted no-kernels', text: whyNoKernels(t, step) }));
    // Host-side node spans (start_us, time_us) still give a timeline of the step.
    const spans: Kernel[] = [...step.records.values()].filter((r) => r.startUs !== null && r.timeUs !== null && r.timeUs > 0)
      .map((r) => ({ name: g.nodes[r.id].name, node: r.id, startNs: r.startUs! * 1000, durationNs: r.timeUs! * 1000,
                     grid: [], block: [], registers: null, sharedBytes: null }));
    if (spans.length) {
      this.timeline = kernelTimeline(spans, { width, nodes: g.nodes, selected: this.selected, onPick: this.onNode, hostSpans: true });
      this.kernelsRoot.append(el('div', { class: 'timings-head', text: `Node timeline of step ${step.index} on the host clock (${spans.length} nodes). Scroll to zoom, drag to pan, click to inspect.` }),
        this.timeline.root);
    }
  }
}

// The step's GPU figures as labelled chips; lost CUPTI records stand out.
function gpuChips(s: StepGpu): HTMLElement[] {
  const chip = (label: string, value: string, cls = '') => el('span', { class: `chip ${cls}`, 'data-k': label }, el('span', { class: 'k', text: label }), value);
  const share = s.busyMs !== null && s.gpuMs ? ` (${((s.busyMs / s.gpuMs) * 100).toFixed(0)} %)` : '';
  const out = [chip('GPU span', fmtMs(s.gpuMs)), chip('busy', fmtMs(s.busyMs) + share), chip('idle', `${fmtMs(s.idleMs)}${s.kernels ? ` in ${fmtInt(s.gaps)} gaps` : ''}`),
    ...(s.eventMs !== null ? [chip('GPU events', fmtMs(s.eventMs))] : []),
    chip('host enqueue', fmtMs(s.hostMs)), chip('step wall', fmtMs(s.wallMs)), chip('kernels', s.kernels ? `${fmtInt(s.kernels)}${s.unattributed ? `, ${s.unattributed} without a node` : ''}` : 'none')];
  if (s.dropped !== null) out.push(chip('dropped records', fmtInt(s.dropped), s.dropped > 0 ? 'bad' : ''));
  if (s.kernels && !s.recorded) out.push(el('span', { class: 'muted', text: '(computed from the kernel records)' }));
  return out;
}
