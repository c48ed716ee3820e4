// Comparison of two traces (A, B): the first divergent node one click away, token agreement
// per step, and time deltas per op type and per node.
import { barChart } from '../charts/bar-chart';
import type { Comparison } from '../model/compare';
import type { Trace } from '../model/types';
import { clear, el } from '../ui/dom';
import { cachedWidth } from '../ui/measure';
import { fmtDb, fmtMs, fmtNats, fmtProb, fmtSignedUs, tokenLabel } from '../ui/format';

export class ComparePanel {
  readonly root = el('div', { class: 'compare-panel' });
  readonly banner = el('div', { class: 'divergence-banner' });

  constructor(private onJump: (step: number, node: number) => void) {}

  setComparison(a: Trace, b: Trace, cmp: Comparison): void {
    clear(this.banner);
    const f = cmp.firstDivergent;
    if (f) {
      const go = el('button', { class: 'goto-divergent', text: `Show ${f.name}` });
      go.addEventListener('click', () => this.onJump(f.step, f.node));
      this.banner.append(el('span', { class: 'dot bad' }),
        el('span', { text: `First divergent node: ` }), el('strong', { class: 'divergent-name', text: f.name }),
        el('span', { text: ` at step ${f.step} — SQNR ${fmtDb(f.sqnrDb)} (divergent when ${thresholdText(cmp)})` }), go);
    } else {
      this.banner.append(el('span', { class: 'dot ok' }),
        el('span', { text: `No node diverges: every node stays above the threshold (${thresholdText(cmp)}).` }));
      const worst = lowestSqnr(cmp);
      if (worst) {
        const go = el('button', { class: 'goto-worst', text: `Show ${worst.name}` });
        go.addEventListener('click', () => this.onJump(worst.step, worst.node));
        this.banner.append(el('span', { class: 'muted', text: `closest call: ${worst.name}, SQNR ${fmtDb(worst.sqnr)} at step ${worst.step}` }), go);
      }
    }
    this.banner.classList.toggle('ok', !f);
    this.banner.append(el('span', { class: 'agreement', text: `token agreement ${fmtProb(cmp.tokenAgreement)}` }));
    this.update(a, b, cmp, 0);
  }

  update(a: Trace, b: Trace, cmp: Comparison, step: number): void {
    clear(this.root);
    const text = (t: Trace, i: number, id: number | null) => (id === null ? '—' : tokenLabel(t.steps[i]?.logits?.chosenText ?? `#${id}`));
    const tbl = el('table', { class: 'agreement-table' },
      el('tr', {}, ...['step', `A: ${a.meta.matmulPath || a.name}`, `B: ${b.meta.matmulPath || b.name}`, 'agree', 'KL(A‖B) top-k', 'time A', 'time B'].map((h) => el('th', { text: h }))));
    for (const s of cmp.steps) {
      const tr = el('tr', { class: `${s.agree ? 'agree' : 'disagree'}${s.index === step ? ' current' : ''}`, 'data-step': s.index },
        el('td', { text: String(s.index) }), el('td', { text: text(a, s.index, s.tokenA) }), el('td', { text: text(b, s.index, s.tokenB) }),
        el('td', { text: s.agree ? '✓' : '✗' }), el('td', { text: fmtNats(s.klTopk) }), el('td', { text: fmtMs(s.timeMsA) }), el('td', { text: fmtMs(s.timeMsB) }));
      tr.addEventListener('click', () => this.onJump(s.index, -1));
      tbl.append(tr);
    }
    const w = Math.max(320, Math.floor(cachedWidth(this.root, 900) / 3) - 24);
    const ops = cmp.opTimes.map((o) => ({ label: o.op, value: o.usB - o.usA, text: fmtSignedUs(o.usB - o.usA),
      title: `${o.op}: A ${o.usA} µs, B ${o.usB} µs over the whole run` })).sort((x, y) => Math.abs(y.value) - Math.abs(x.value));
    const cs = cmp.steps.find((s) => s.index === step);
    const nodes = cs ? [...cs.nodes.values()].filter((n) => n.timeUsA !== null && n.timeUsB !== null)
      .map((n) => ({ label: n.name, value: n.timeUsB! - n.timeUsA!, text: fmtSignedUs(n.timeUsB! - n.timeUsA!), onClick: () => this.onJump(step, n.id) }))
      .sort((x, y) => Math.abs(y.value) - Math.abs(x.value)).slice(0, 12) : [];
    this.root.append(el('div', { class: 'three-col' },
      el('div', { class: 'agreement-wrap' }, el('h4', { text: 'Token agreement per step (click a row to go to the step)' }), tbl),
      el('div', {}, el('h4', { text: 'Time delta B − A per op type (whole run; green = B faster)' }), barChart(ops, { width: w, labelWidth: 90 })),
      el('div', {}, el('h4', { text: `Time delta B − A per node, step ${step} (largest 12)` }),
        nodes.length ? barChart(nodes, { width: w, labelWidth: 150, color: '#f28e2b' }) : el('p', { class: 'muted', text: 'No node times in this step.' }))));
  }
}

function thresholdText(cmp: Comparison): string {
  return cmp.threshold.metric === 'sqnr_db' ? `SQNR < ${cmp.threshold.value} dB` : `${cmp.threshold.metric} past ${cmp.threshold.value}`;
}

// The node that came closest to the threshold, read from the server's comparison.
function lowestSqnr(cmp: Comparison): { step: number; node: number; name: string; sqnr: number } | null {
  let best: { step: number; node: number; name: string; sqnr: number } | null = null;
  for (const s of cmp.steps)
    for (const n of s.nodes.values())
      if (n.sqnrDb !== null && Number.isFinite(n.sqnrDb) && (!best || n.sqnrDb < best.sqnr)) best = { step: s.index, node: n.id, name: n.name, sqnr: n.sqnrDb };
  return best;
}
