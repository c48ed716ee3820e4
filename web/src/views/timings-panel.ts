// Timings of the current step: time per op type, the slowest nodes, and the kernel timeline
// when the trace has CUPTI kernel records.
import { barChart } from '../charts/bar-chart';
import { kernelTimeline } from '../charts/kernel-timeline';
import type { Kernel, Step, Trace } from '../model/types';
import { clear, el } from '../ui/dom';
import { fmtMs, fmtUs } from '../ui/format';
import { cachedWidth } from '../ui/measure';

export class TimingsPanel {
  readonly root = el('div', { class: 'timings-panel' });
  readonly kernelsRoot = el('div', { class: 'kernels-panel' });

  constructor(private onNode: (id: number) => void) {}

  update(t: Trace, step: Step): void {
    clear(this.root);
    const g = t.graphs.get(step.graphId)!;
    const perOp = new Map<string, number>();
    const perNode: { id: number; us: number }[] = [];
    for (const r of step.records.values()) {
      if (r.timeUs === null) continue;
      const op = g.nodes[r.id].op;
      perOp.set(op, (perOp.get(op) ?? 0) + r.timeUs);
      perNode.push({ id: r.id, us: r.timeUs });
    }
    const total = [...perOp.values()].reduce((a, b) => a + b, 0);
    const w = Math.max(320, Math.floor(cachedWidth(this.root, 900) / 2) - 24);
    if (perNode.length === 0) {
      this.root.append(el('p', { class: 'muted', text: 'This trace has no per-node times.' }));
    } else {
      const ops = [...perOp.entries()].sort((a, b) => b[1] - a[1]);
      const nodes = perNode.sort((a, b) => b.us - a.us).slice(0, 15);
      this.root.append(el('div', { class: 'timings-head', text: `Step ${step.index} (${step.phase}): wall time ${fmtMs(step.timeMs)}; sum of node times ${fmtUs(total)}` }),
        el('div', { class: 'two-col' },
          el('div', {}, el('h4', { text: 'Time per op type (µs, share of node time)' }),
            barChart(ops.map(([op, us]) => ({ label: op, value: us, text: `${fmtUs(us)} · ${((us / total) * 100).toFixed(1)} %` })), { width: w, labelWidth: 90, textWidth: 130 })),
          el('div', {}, el('h4', { text: 'Slowest 15 nodes (µs, click to inspect)' }),
            barChart(nodes.map((n) => ({ label: g.nodes[n.id].name, value: n.us, text: fmtUs(n.us), onClick: () => this.onNode(n.id) })),
              { width: w, labelWidth: 150, color: '#f28e2b' }))));
    }
    clear(this.kernelsRoot);
    if (step.kernels.length) {
      const sum = step.kernels.reduce((a, k) => a + k.durationNs, 0) / 1000;
      this.kernelsRoot.append(el('div', { class: 'timings-head', text: `Step ${step.index}: ${step.kernels.length} kernels, ${fmtUs(sum)} of GPU time. Scroll to zoom, drag to pan, click a kernel to inspect its node.` }),
        kernelTimeline(step.kernels, g.nodes, Math.max(600, cachedWidth(this.kernelsRoot, 1100) - 20), this.onNode));
    } else {
      this.kernelsRoot.append(el('p', { class: 'muted', text: t.meta.backend === 'cuda' ? 'No kernel records in this step.' :
        `No kernel records: this trace was recorded on the ${t.meta.backend || 'unknown'} backend (CUPTI kernel timings exist only for cuda runs).` }));
      // Host-side node spans (start_us, time_us) still give a timeline of the step.
      const spans: Kernel[] = [...step.records.values()].filter((r) => r.startUs !== null && r.timeUs !== null && r.timeUs > 0)
        .map((r) => ({ name: g.nodes[r.id].name, node: r.id, startNs: r.startUs! * 1000, durationNs: r.timeUs! * 1000,
                       grid: [], block: [], registers: null, sharedBytes: null }));
      if (spans.length)
        this.kernelsRoot.append(el('div', { class: 'timings-head', text: `Node timeline of step ${step.index} on the host clock (${spans.length} nodes). Scroll to zoom, drag to pan, click to inspect.` }),
          kernelTimeline(spans, g.nodes, Math.max(600, cachedWidth(this.kernelsRoot, 1100) - 20), this.onNode));
    }
  }
}
