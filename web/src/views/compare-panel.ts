// Comparison of run A with run B (a paired trace, or two traces): the banner that names the node
// that first adds error and by how much, the error-accumulation chart, the worst-nodes table,
// both next-token distributions, per-step agreement (inputs, tokens, KL) and time deltas.
import { barChart } from '../charts/bar-chart';
import { isIdenticalDb, type Comparison } from '../model/compare';
import type { Trace, TraceGraph } from '../model/types';
import { clear, el } from '../ui/dom';
import { cachedWidth } from '../ui/measure';
import { fmtDb, fmtMs, fmtNats, fmtProb, fmtSignedUs, tokenLabel } from '../ui/format';
import { errorChart, type ChartMode } from './error-chart';
import { margin as topMargin, topkPair } from './topk-pair';
import { WorstNodesTable } from './worst-nodes-table';

export function sourceText(cmp: Comparison): string {
  return cmp.metricsSource === 'full' ? 'full-tensor metrics' : 'from sampled grid (a strided sample of each row, not the whole tensor)';
}

export function runLabel(cmp: Comparison, which: 'a' | 'b'): string {
  const side = which === 'a' ? cmp.a : cmp.b;
  return `${which.toUpperCase()}: ${side.matmulPath || side.file}${cmp.reference === which ? ' (reference)' : ''}`;
}

// The first step whose inputs differ, or null.
export function firstInputsDiffer(cmp: Comparison): number | null {
  return cmp.steps.find((s) => !s.inputsAgree)?.index ?? null;
}

export class ComparePanel {
  readonly root = el('div', { class: 'compare-panel' });
  readonly banner = el('div', { class: 'divergence-banner' });
  private table: WorstNodesTable;
  private mode: ChartMode = 'db';

  constructor(private onJump: (step: number, node: number) => void, private onReference: ((ref: 'a' | 'b') => void) | null = null) {
    this.table = new WorstNodesTable(onJump);
  }

  setComparison(a: Trace, b: Trace, cmp: Comparison): void {
    clear(this.banner);
    this.banner.dataset.source = cmp.metricsSource;
    const go = (cls: string, text: string, step: number, node: number) => {
      const bt = el('button', { class: cls, text });
      bt.addEventListener('click', () => this.onJump(step, node));
      return bt;
    };
    const f = cmp.firstDivergent, fl = cmp.firstLocal;
    const src = el('span', { class: 'metrics-source', text: cmp.metricsSource === 'full' ? 'full tensor' : 'from sampled grid' });
    if (cmp.identical) {
      this.banner.append(el('span', { class: 'dot ok' }), el('strong', { class: 'identical', text: 'Identical: ' }),
        el('span', { text: 'every compared node and the logits of every step agree exactly (A and B are the same run).' }));
    } else if (fl) {
      // Paired: the node whose own error first passes the threshold, and what the error is there.
      this.banner.append(el('span', { class: 'dot bad' }), el('span', { text: 'First node that adds error: ' }),
        el('strong', { class: 'divergent-name', text: fl.name }),
        el('span', { class: 'first-local', text: ` at step ${fl.step}: adds ${fmtDb(fl.localDb)} SQNR itself (local), full tensor ${fmtDb(fl.sqnrDb)}` }),
        go('goto-divergent', `Show ${fl.name}`, fl.step, fl.node));
      if (f && (f.node !== fl.node || f.step !== fl.step))
        this.banner.append(el('span', { class: 'muted', text: ` · first node under ${cmp.threshold.value} dB: ${f.name} at step ${f.step} (${fmtDb(f.sqnrDb)}, inherited)` }),
          go('goto-first-under', `Show ${f.name}`, f.step, f.node));
    } else if (f) {
      // Paired: no node's own error passes the threshold, so what pushes this one under it is
      // inherited; say how much it adds itself.
      const own = cmp.paired ? cmp.steps.find((s) => s.index === f.step)?.nodes.get(f.node)?.local?.sqnrDb ?? null : null;
      const ownText = own === null ? '' : isIdenticalDb(own) ? '; it adds no error itself (local exact): all inherited' : `; it adds ${fmtDb(own)} itself (local), the rest is inherited`;
      this.banner.append(el('span', { class: 'dot bad' }), el('span', { text: cmp.paired ? `First node under ${cmp.threshold.value} dB: ` : 'First divergent node: ' }),
        el('strong', { class: 'divergent-name', text: f.name }),
        el('span', { class: 'first-full', text: ` at step ${f.step} — SQNR ${fmtDb(f.sqnrDb)}${cmp.paired ? ownText : ` (divergent when ${thresholdText(cmp)})`} ` }), src,
        go('goto-divergent', `Show ${f.name}`, f.step, f.node));
    } else {
      this.banner.append(el('span', { class: 'dot ok' }),
        el('span', { text: `No node diverges on steps whose inputs agree: every node stays above the threshold (${thresholdText(cmp)}). ` }), src);
      const worst = lowestSqnr(cmp);
      if (worst) this.banner.append(el('span', { class: 'muted', text: ` closest call: ${worst.name}, SQNR ${fmtDb(worst.sqnr)} at step ${worst.step}` }),
        go('goto-worst', `Show ${worst.name}`, worst.step, worst.node));
    }
    const differ = firstInputsDiffer(cmp);
    if (differ !== null)
      this.banner.append(el('span', { class: 'inputs-differ-note', text: ` · inputs differ from step ${differ} on (the runs sampled different tokens): those steps are not compared for divergence` }));
    this.banner.classList.toggle('ok', cmp.identical || (!f && !fl));
    if (!cmp.identical && !fl) this.ownErrorNote(cmp, go);
    this.banner.append(el('span', { class: 'agreement', text: `token agreement ${fmtProb(cmp.tokenAgreement)}` }));
    this.update(a, b, cmp, 0);
  }

  // Paired, when no node's own error passes the threshold: where error first enters the run and
  // which node adds the most of it.
  private ownErrorNote(cmp: Comparison, go: (cls: string, text: string, step: number, node: number) => HTMLElement): void {
    const e = cmp.firstOwnError, w = cmp.worstLocal;
    if (!cmp.paired || !e || !w) return;
    this.banner.append(el('span', { class: 'own-error muted' },
      el('span', { text: `No node adds under ${cmp.threshold.value} dB itself: error enters at ` }),
      go('first-own-name link', e.name, e.step, e.node), el('span', { class: 'first-own-db', text: ` (step ${e.step}, local ${fmtDb(e.localDb)})` }),
      el('span', { text: ', most is added by ' }),
      go('worst-local-name link', w.name, w.step, w.node), el('span', { class: 'worst-local-db', text: ` (step ${w.step}, local ${fmtDb(w.localDb)})` })));
  }

  update(a: Trace, b: Trace, cmp: Comparison, step: number): void {
    clear(this.root);
    const graphOf = (i: number): TraceGraph => a.graphs.get(a.steps[i]?.graphId ?? '') ?? [...a.graphs.values()][0];
    const w = cachedWidth(this.root, 1200);
    // Head: where the metrics come from, which run is the reference.
    const head = el('div', { class: 'compare-head' },
      el('span', { class: 'metrics-source-line', text: `Metrics: ${sourceText(cmp)}${cmp.paired ? ' · paired lockstep run: both paths on the same tokens' : ''}` }));
    if (this.onReference && !cmp.paired) {
      const sel = el('select', { class: 'reference-select', title: 'SQNR and relative error are measured against this run' },
        el('option', { value: 'a', text: `reference: A (${cmp.a.matmulPath || cmp.a.file})`, selected: cmp.reference === 'a' }),
        el('option', { value: 'b', text: `reference: B (${cmp.b.matmulPath || cmp.b.file})`, selected: cmp.reference === 'b' }));
      sel.addEventListener('change', () => this.onReference!(sel.value as 'a' | 'b'));
      head.append(sel);
    } else head.append(el('span', { class: 'reference-fixed', text: ` · reference: ${cmp.reference.toUpperCase()} (${(cmp.reference === 'a' ? cmp.a : cmp.b).matmulPath})${cmp.paired ? ', as recorded' : ''}` }));
    const modeSel = el('select', { class: 'chart-mode' },
      el('option', { value: 'db', text: 'chart: SQNR (dB)', selected: this.mode === 'db' }),
      el('option', { value: 'rel', text: 'chart: relative error', selected: this.mode === 'rel' }));
    modeSel.addEventListener('change', () => { this.mode = modeSel.value as ChartMode; this.update(a, b, cmp, step); });
    head.append(modeSel);
    const cs = cmp.steps.find((s) => s.index === step);
    const stepNote = cs && !cs.inputsAgree ? el('div', { class: 'inputs-differ-note', text: `Step ${step}: inputs differ (A and B read different tokens), so its errors are not a divergence of the path.` }) : null;
    const chartW = Math.max(420, Math.floor(w * 0.55) - 16);
    const chart = el('div', { class: 'error-chart-wrap' },
      el('h4', { text: `Error along the graph, step ${step} (${cmp.metricsSource === 'full' ? 'full tensor' : 'from sampled grid'}): line = ${cmp.paired ? 'full tensor' : 'the node\'s output'} (inherited + added)${cmp.paired ? ', squares = local (added by the node itself)' : ''}` }),
      stepNote, errorChart(cmp, step, graphOf, this.mode, chartW, this.onJump));
    this.table.set(cmp, graphOf);
    const tokens = el('div', { class: 'topk-wrap' }, el('h4', { text: `Next token after step ${step}: A and B` }),
      topkPair(a, b, step, [runLabel(cmp, 'a'), runLabel(cmp, 'b')], [cs?.marginA ?? null, cs?.marginB ?? null]));
    this.root.append(head, el('div', { class: 'compare-grid' },
      el('div', { class: 'compare-left' }, chart, tokens),
      el('div', { class: 'compare-right' }, el('h4', { text: `Worst nodes over all steps (${cmp.metricsSource === 'full' ? 'full tensor' : 'from sampled grid'})` }), this.table.root)));
    this.root.append(this.stepTable(a, b, cmp, step));
    const bars = this.timeBars(cmp, step, w);
    if (bars) this.root.append(bars);
  }

  private stepTable(a: Trace, b: Trace, cmp: Comparison, step: number): HTMLElement {
    const text = (t: Trace, i: number, id: number | null) => (id === null ? '—' : tokenLabel(t.steps[i]?.logits?.chosenText ?? `#${id}`));
    const kl = cmp.paired ? 'KL(A‖B), full vocabulary' : 'KL top-k';
    const tbl = el('table', { class: 'agreement-table' },
      el('tr', {}, ...['step', runLabel(cmp, 'a'), runLabel(cmp, 'b'), 'agree', 'inputs', kl, 'margin A', 'margin B', 'time A', 'time B'].map((h) => el('th', { text: h }))));
    for (const s of cmp.steps) {
      const tr = el('tr', { class: `${s.agree ? 'agree' : 'disagree'}${s.inputsAgree ? '' : ' inputs-differ'}${s.index === step ? ' current' : ''}`, 'data-step': s.index },
        el('td', { text: String(s.index) }), el('td', { text: text(a, s.index, s.tokenA) }), el('td', { text: text(b, s.index, s.tokenB) }),
        el('td', { text: s.agree ? '✓' : cmp.paired ? '✗ (B would pick another)' : '✗' }),
        el('td', { class: 'inputs', text: s.inputsAgree ? 'same' : 'inputs differ' }),
        el('td', { text: fmtNats(s.kl ?? s.klTopk) }),
        el('td', { text: fmtProb(s.marginA ?? margin(a, s.index)) }), el('td', { text: fmtProb(s.marginB ?? margin(b, s.index)) }),
        el('td', { text: fmtMs(s.timeMsA) }), el('td', { text: fmtMs(s.timeMsB) }));
      tr.addEventListener('click', () => this.onJump(s.index, -1));
      tbl.append(tr);
    }
    return el('div', { class: 'agreement-wrap' }, el('h4', { text: 'Per step: chosen tokens, inputs, KL and top1−top2 margin (click a row to go to the step)' }), tbl);
  }

  private timeBars(cmp: Comparison, step: number, width: number): HTMLElement | null {
    if (cmp.opTimes.length === 0) return null;
    const w = Math.max(320, Math.floor(width / 2) - 24);
    const ops = cmp.opTimes.map((o) => ({ label: o.op, value: o.usB - o.usA, text: fmtSignedUs(o.usB - o.usA),
      title: `${o.op}: A ${o.usA} µs, B ${o.usB} µs over the whole run` })).sort((x, y) => Math.abs(y.value) - Math.abs(x.value));
    const cs = cmp.steps.find((s) => s.index === step);
    const nodes = cs ? [...cs.nodes.values()].filter((n) => n.timeUsA !== null && n.timeUsB !== null)
      .map((n) => ({ label: n.name, value: n.timeUsB! - n.timeUsA!, text: fmtSignedUs(n.timeUsB! - n.timeUsA!), onClick: () => this.onJump(step, n.id) }))
      .sort((x, y) => Math.abs(y.value) - Math.abs(x.value)).slice(0, 12) : [];
    return el('div', { class: 'two-col' },
      el('div', {}, el('h4', { text: 'Time delta B − A per op type (whole run; green = B faster)' }), barChart(ops, { width: w, labelWidth: 90 })),
      el('div', {}, el('h4', { text: `Time delta B − A per node, step ${step} (largest 12)` }),
        nodes.length ? barChart(nodes, { width: w, labelWidth: 150, color: '#f28e2b' }) : el('p', { class: 'muted', text: 'No node times in this step.' })));
  }
}

function margin(t: Trace, i: number): number | null {
  return topMargin(t.steps[i]?.logits ?? null);
}

function thresholdText(cmp: Comparison): string {
  return cmp.threshold.metric === 'sqnr_db' ? `SQNR < ${cmp.threshold.value} dB` : `${cmp.threshold.metric} past ${cmp.threshold.value}`;
}

// The node that came closest to the threshold on steps whose inputs agree (never an identical one).
function lowestSqnr(cmp: Comparison): { step: number; node: number; name: string; sqnr: number } | null {
  let best: { step: number; node: number; name: string; sqnr: number } | null = null;
  for (const s of cmp.steps) {
    if (!s.inputsAgree) continue;
    for (const n of s.nodes.values())
      if (n.sqnrDb !== null && Number.isFinite(n.sqnrDb) && !isIdenticalDb(n.sqnrDb) && (!best || n.sqnrDb < best.sqnr))
        best = { step: s.index, node: n.id, name: n.name, sqnr: n.sqnrDb };
  }
  return best;
}
