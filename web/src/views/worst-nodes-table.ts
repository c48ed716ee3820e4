// The worst-nodes table over all steps: sortable by any metric (click a header), filterable by
// op and weight type; steps whose inputs differ are left out unless asked for, and marked.
import { isIdenticalDb, type Comparison } from '../model/compare';
import type { TraceGraph } from '../model/types';
import { filterRows, nodeRows, sortRows, WORST_FIRST, type NodeRow, type RowFilter, type SortKey } from '../model/worst-nodes';
import { clear, el } from '../ui/dom';
import { fmtDb, fmtInt, fmtNum } from '../ui/format';
import { errorFill, type ErrorKind } from './error-scale';
import { textColor } from './node-colors';

const MAX_ROWS = 60;
// The writers cap SQNR at 200 dB for equal tensors: say "exact" rather than a measured-looking 200.0 dB.
const dbCell = (db: number | null) => (isIdenticalDb(db) ? 'exact' : fmtDb(db));

interface Column { key: SortKey; label: string; title: string; kind?: ErrorKind; fmt: (r: NodeRow) => string }

export class WorstNodesTable {
  readonly root = el('div', { class: 'worst-nodes' });
  private key: SortKey | null = null;
  private dir: 'asc' | 'desc' = 'asc';
  private filter: RowFilter = { op: null, weightType: null, includeInputsDiffer: false };
  private rows: NodeRow[] = [];
  private cmp: Comparison | null = null;

  constructor(private onPick: (step: number, node: number) => void) {}

  set(cmp: Comparison, graphOf: (step: number) => TraceGraph): void {
    if (cmp !== this.cmp) {
      this.cmp = cmp;
      this.rows = nodeRows(cmp, graphOf);
      // Paired traces: the nodes that ADD the most error first; otherwise the lowest SQNR.
      if (this.key === null) this.key = cmp.steps.some((s) => [...s.nodes.values()].some((n) => n.local)) ? 'localDb' : 'sqnrDb';
      this.dir = WORST_FIRST[this.key];
    }
    this.render();
  }

  private columns(): Column[] {
    const full = this.cmp?.metricsSource === 'full';
    const cols: Column[] = [
      { key: 'step', label: 'step', title: 'step index (0 = prefill)', fmt: (r) => String(r.step) },
      { key: 'name', label: 'node', title: 'node name', fmt: (r) => r.name },
      { key: 'sqnrDb', label: 'SQNR', title: `signal-to-quantization-noise ratio of the ${full ? 'full tensor' : 'sampled grid'} (dB, higher is closer)`, kind: 'db', fmt: (r) => dbCell(r.sqnrDb) },
    ];
    if (this.rows.some((r) => r.localDb !== null))
      cols.push({ key: 'localDb', label: 'local SQNR', title: 'the error the node adds itself: its op on the same inputs by both paths (dB)', kind: 'db', fmt: (r) => dbCell(r.localDb) });
    cols.push(
      { key: 'cosine', label: 'cosine', title: 'cosine similarity of A and B', kind: 'cos', fmt: (r) => fmtNum(r.cosine, 6) },
      { key: 'relL2', label: 'rel. error', title: '‖A−B‖ / ‖reference‖', kind: 'rel', fmt: (r) => fmtNum(r.relL2, 3) },
      { key: 'maxAbsDiff', label: 'max |A−B|', title: 'largest absolute difference (activation units)', fmt: (r) => fmtNum(r.maxAbsDiff, 3) });
    if (this.rows.some((r) => r.nBeyond !== null))
      cols.push({ key: 'nBeyond', label: 'beyond tol.', title: 'elements with |A−B| > abs + rel·|B| (meta.compare.tolerance)', fmt: (r) => fmtInt(r.nBeyond) });
    return cols;
  }

  private render(): void {
    clear(this.root);
    const ops = [...new Set(this.rows.map((r) => r.op))].sort();
    const wts = [...new Set(this.rows.map((r) => r.weightType).filter((w): w is string => !!w))].sort();
    const select = (id: string, all: string, values: string[], cur: string | null, set: (v: string | null) => void) => {
      const s = el('select', { class: id }, el('option', { value: '', text: all }), ...values.map((v) => el('option', { value: v, text: v, selected: v === cur })));
      s.addEventListener('change', () => { set(s.value || null); this.render(); });
      return s;
    };
    const differ = this.rows.some((r) => !r.inputsAgree);
    const inc = el('input', { type: 'checkbox', class: 'wn-inputs-differ', checked: this.filter.includeInputsDiffer });
    inc.addEventListener('change', () => { this.filter.includeInputsDiffer = inc.checked; this.render(); });
    const shown = sortRows(filterRows(this.rows, this.filter), this.key!, this.dir);
    this.root.append(el('div', { class: 'wn-controls' },
      select('wn-op', 'all ops', ops, this.filter.op, (v) => { this.filter.op = v; }),
      select('wn-wtype', 'all weight types', wts, this.filter.weightType, (v) => { this.filter.weightType = v; }),
      differ ? el('label', { class: 'wn-differ-label' }, inc, ' include steps whose inputs differ') : null,
      el('span', { class: 'muted', text: `${shown.length} node-steps${shown.length > MAX_ROWS ? `, worst ${MAX_ROWS} shown` : ''}; click a header to sort, a row to open the node` })));
    const cols = this.columns();
    const head = el('tr', {}, ...cols.map((c) => {
      const th = el('th', { class: `sortable${c.key === this.key ? ` sorted ${this.dir}` : ''}`, 'data-key': c.key, title: c.title,
        text: `${c.label}${c.key === this.key ? (this.dir === 'asc' ? ' ▲' : ' ▼') : ''}` });
      th.addEventListener('click', () => {
        if (this.key === c.key) this.dir = this.dir === 'asc' ? 'desc' : 'asc';
        else { this.key = c.key; this.dir = WORST_FIRST[c.key]; }
        this.render();
      });
      return th;
    }), el('th', { text: 'op' }), el('th', { text: 'weight' }));
    const table = el('table', { class: 'worst-table' }, head);
    for (const r of shown.slice(0, MAX_ROWS)) {
      const tr = el('tr', { 'data-step': r.step, 'data-node': r.node, class: r.inputsAgree ? '' : 'inputs-differ' },
        ...cols.map((c) => {
          const v = r[c.key];
          const td = el('td', { text: c.fmt(r) + (c.key === 'step' && !r.inputsAgree ? ' (inputs differ)' : '') });
          if (c.kind && typeof v === 'number') { const f = errorFill(c.kind, v); td.style.background = f; td.style.color = textColor(f); td.classList.add('err-cell'); }
          return td;
        }), el('td', { text: r.op }), el('td', { text: r.weightType ?? '—' }));
      tr.addEventListener('click', () => this.onPick(r.step, r.node));
      table.append(tr);
    }
    this.root.append(el('div', { class: 'worst-table-wrap' }, table));
  }
}
