// The inspector's comparison sections for one node and step: the error metrics (full tensor or
// sampled grid, local vs inherited), A and B heatmaps on ONE colour scale plus the relative
// error map, the outlier channels with B's value and the error there, and the MMQ activation
// block scales.
import { heatmap } from '../charts/heatmap';
import type { ValueScaleMode } from '../charts/color-scales';
import { isIdenticalDb, type CompareNode, type MetricsSource } from '../model/compare';
import type { ActScales, NodeRecord, ValueGrid } from '../model/types';
import { el, kvTable } from '../ui/dom';
import { fmtDb, fmtInt, fmtNum, fmtUs } from '../ui/format';

export function diffTable(d: CompareNode, source: MetricsSource): HTMLElement {
  const src = source === 'full' ? 'full tensor' : 'from sampled grid';
  const rows: [string, string][] = [
    [`SQNR (${src})`, fmtDb(d.sqnrDb)],
  ];
  if (d.local) {
    rows.push(['local SQNR (error the node adds)', fmtDb(d.local.sqnrDb)]);
    rows.push(['error origin', errorOrigin(d)]);
  }
  rows.push([`cosine similarity (${src})`, fmtNum(d.cosine, 7)]);
  if (d.relL2 !== null) rows.push(['relative error ‖A−B‖/‖ref‖', fmtNum(d.relL2, 3)]);
  if (d.local?.relL2 != null) rows.push(['local relative error', fmtNum(d.local.relL2, 3)]);
  rows.push([`max |A − B| (${src})`, `${fmtNum(d.maxAbsDiff)} (activation units)${d.maxAbsAt ? ` at row ${d.maxAbsAt[0]}, column ${d.maxAbsAt[1]}` : ''}`]);
  if (d.nBeyond !== null) rows.push(['beyond tolerance', `${fmtInt(d.nBeyond)} values`]);
  for (const [k, v] of Object.entries(d.relErr)) rows.push([`relative error of ${k}`, v === null ? '—' : `${fmtNum(v * 100, 3)} %`]);
  if (d.timeUsA !== null || d.timeUsB !== null) rows.push(['time A → B', `${fmtUs(d.timeUsA)} → ${fmtUs(d.timeUsB)}`]);
  return kvTable(rows);
}

// Local vs inherited: errors add as powers, so the full-tensor error power minus the local one is
// what came in from upstream.
export function errorOrigin(d: CompareNode): string {
  const full = d.sqnrDb, local = d.local?.sqnrDb ?? null;
  if (full === null || local === null) return '—';
  if (isIdenticalDb(full)) return 'none: identical';
  if (isIdenticalDb(local)) return 'all inherited (the node adds none: exact on the same inputs)';
  const pf = 10 ** (-full / 10), pl = 10 ** (-local / 10);
  const share = Math.max(0, Math.min(1, pl / pf));
  return `${fmtNum(share * 100, 3)} % added here, ${fmtNum((1 - share) * 100, 3)} % inherited (by error power)`;
}

function maxAbs(r: NodeRecord | null | undefined): number {
  const s = r?.stats;
  return s ? Math.max(Math.abs(s.min), Math.abs(s.max)) : 0;
}

// A and B on one colour scale (covering both full tensors' max |x|), and |A−B| relative to the
// reference's RMS cell by cell.
export function pairedHeatmaps(a: NodeRecord | null, b: NodeRecord | null, labels: [string, string], refIsA: boolean,
                               mode: ValueScaleMode, width: number): HTMLElement[] {
  const ga = a?.grid, gb = b?.grid;
  const grids = [ga, gb].filter((g): g is ValueGrid => !!g);
  const joint = new Float32Array(grids.reduce((n, g) => n + g.values.length, 0));
  let off = 0;
  for (const g of grids) { joint.set(g.values, off); off += g.values.length; }
  const full = Math.max(maxAbs(a), maxAbs(b));
  const out: HTMLElement[] = [];
  if (ga) out.push(heatmap(ga, { width, mode, title: `${labels[0]} — shared scale with B`, scaleValues: joint, fullMaxAbs: full }));
  if (gb) out.push(heatmap(gb, { width, mode, title: `${labels[1]} — shared scale with A`, scaleValues: joint, fullMaxAbs: full }));
  if (ga && gb && ga.rows === gb.rows && ga.cols === gb.cols) {
    const ref = refIsA ? ga : gb;
    let sq = 0, n = 0;
    for (const v of ref.values) if (Number.isFinite(v)) { sq += v * v; n++; }
    const rms = Math.sqrt(sq / Math.max(1, n)) || 1;
    const rel = ga.values.map((v, i) => Math.abs(v - gb.values[i]) / rms);
    out.push(heatmap({ ...ga, values: rel }, { width, mode, title: `relative error |A−B| / RMS(reference) of the sampled cells (RMS ${fmtNum(rms, 3)})`,
      unit: 'White = 0, red = larger error (a ratio, no unit).' }));
  }
  return out;
}

export function outliersTable(a: NodeRecord, b: NodeRecord | null, labels: [string, string]): HTMLElement | null {
  const list = a.outliers;
  if (!list || list.length === 0) return null;
  // B's value at the same spot: recorded with A's outliers in a paired trace; else B's own list.
  const bAt = new Map((b?.outliers ?? []).map((o) => [`${o.row},${o.col}`, o.value]));
  const t = el('table', { class: 'grid-table outliers-table' },
    el('tr', {}, ...['row', 'channel', labels[0], labels[1], '|A−B|', 'rel. error'].map((h) => el('th', { text: h }))));
  for (const o of list) {
    const bv = o.refValue ?? bAt.get(`${o.row},${o.col}`) ?? null;
    const d = bv === null ? null : Math.abs(o.value - bv);
    t.append(el('tr', {}, el('td', { text: String(o.row) }), el('td', { text: String(o.col) }), el('td', { text: fmtNum(o.value, 5) }),
      el('td', { text: fmtNum(bv, 5) }), el('td', { text: fmtNum(d, 3) }),
      el('td', { text: d === null || bv === null || bv === 0 ? '—' : `${fmtNum((d / Math.abs(bv)) * 100, 3)} %` })));
  }
  return el('div', {}, t, el('div', { class: 'legend-note', text: `The ${list.length} largest |x| of the full tensor (token row, feature channel), activation units.` }));
}

export function actScalesTable(s: ActScales): HTMLElement {
  return el('div', {}, kvTable([
    ['block scale d min', fmtNum(s.min, 4)], ['block scale d mean', fmtNum(s.mean, 4)], ['block scale d max', fmtNum(s.max, 4)],
    ['max / mean', s.mean > 0 ? `${fmtNum(s.max / s.mean, 3)}×` : '—'],
    ['blocks', `${fmtInt(s.blocks)} of ${s.blockSize} values`],
  ]), el('div', { class: 'legend-note', text: `The int8 activation of this matmul: each block of ${s.blockSize} values is stored as round(x/d) with d = max|x|/127. ` +
    'A block holding an outlier gets a large d, and every other value in it keeps fewer levels: a large max/mean is where int8 loses precision.' }));
}
