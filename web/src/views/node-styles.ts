// What each node of a step looks like for the chosen colour metric: its fill, its label and the
// legend. Pure data for the graph and pipeline views; no DOM until the legend is asked for.
import type { Comparison } from '../model/compare';
import { roofsNote, traceRoofs } from '../model/device-roofs';
import { fusedLabel } from '../model/gpu-time';
import { metricDomain, metricInfo, metricValue, type MetricId } from '../model/metrics';
import type { Trace, TraceGraph } from '../model/types';
import { fmtNum, fmtUs } from '../ui/format';
import type { NodeStyle } from './graph-view';
import { nodeColorScale } from './node-colors';

export interface NodeStyles {
  styles: Map<number, NodeStyle>;
  legendKey: string;              // changes when the legend would: the metric or its range
  legend: () => HTMLElement;
}

// A metric's colour range spans every step of the trace, so it is computed once per metric and
// kept until the data behind it changes (clear(): a new trace, more steps, another reference).
export class NodeColouring {
  private domains = new Map<MetricId, [number, number]>();

  clear(): void {
    this.domains.clear();
  }

  paint(t: Trace, stepIndex: number, g: TraceGraph, metric: MetricId, cmp: Comparison | null): NodeStyles {
    const step = t.steps[stepIndex];
    let domain = this.domains.get(metric);
    if (!domain) { domain = metricDomain(metric, t, cmp); this.domains.set(metric, domain); }
    const scale = nodeColorScale(metricInfo(metric), domain, cmp?.threshold.value ?? null,
      metric === 'roof' ? roofsNote(traceRoofs(t.meta), t.meta.device)
        : cmp ? (cmp.metricsSource === 'full' ? 'full tensor' : 'from sampled grid') : null);
    const styles = new Map<number, NodeStyle>();
    for (const n of g.nodes) {
      const rec = step?.records.get(n.id);
      if (n.dtype === 'i32') {   // token ids and positions are not activations: no colour
        styles.set(n.id, { fill: null, text: /^pos/.test(n.name) ? 'positions' : 'token ids', noOutput: false });   // upstream: "pos"
        continue;
      }
      const v = step ? metricValue(metric, step, n.id, cmp, t) : null;
      styles.set(n.id, {
        fill: v === null || Number.isNaN(v) ? null : scale.fill(v),
        text: v === null ? (rec?.noOutput ? `(${rec.noOutput})` : metric === 'gpu' && step ? fusedLabel(step, n.id, g.nodes) : '') : valueText(metric, v),
        noOutput: !!rec?.noOutput,
      });
    }
    return { styles, legendKey: `${metric}|${domain.join(',')}`, legend: scale.legend };
  }
}

// A node's value as its label shows it, with the metric's unit.
export function valueText(m: MetricId, v: number): string {
  if (m === 'time' || m === 'gpu') return fmtUs(v);
  if (m === 'roof') return `${(100 * v).toFixed(v < 0.1 ? 1 : 0)} % of roof`;
  if (m === 'error' || m === 'local') return v >= 200 || !Number.isFinite(v) ? 'identical' : `${v.toFixed(1)} dB`;
  if (m === 'cosine') return `cos ${v.toFixed(5)}`;
  if (m === 'relerr') return `rel ${fmtNum(v, 2)}`;
  if (m === 'nonfinite') return v > 0 ? `${v} NaN/Inf` : 'finite';
  return `${m === 'absmax' ? 'max|x|' : 'mean|x|'} ${fmtNum(v, 3)}`;
}
