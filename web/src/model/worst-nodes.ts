// Rows of the worst-nodes table: every compared node of every step, with its graph facts (op,
// layer, weight type), filtered and sorted. A pure function of the Comparison and the graphs.
import type { Comparison } from './compare';
import type { TraceGraph } from './types';

export interface NodeRow {
  step: number; node: number; name: string; op: string; layer: number; weightType: string | null;
  inputsAgree: boolean;
  sqnrDb: number | null; localDb: number | null; cosine: number | null; relL2: number | null;
  maxAbsDiff: number | null; nBeyond: number | null;
}

export type SortKey = 'sqnrDb' | 'localDb' | 'cosine' | 'relL2' | 'maxAbsDiff' | 'nBeyond' | 'step' | 'name';

export interface RowFilter { op: string | null; weightType: string | null; includeInputsDiffer: boolean }

export function nodeRows(cmp: Comparison, graphOf: (step: number) => TraceGraph): NodeRow[] {
  const rows: NodeRow[] = [];
  for (const s of cmp.steps) {
    const g = graphOf(s.index);
    for (const c of s.nodes.values()) {
      const n = g.nodes[c.id];
      rows.push({
        step: s.index, node: c.id, name: c.name || n?.name || `#${c.id}`, op: c.op || n?.op || '', layer: n?.layer ?? -1,
        weightType: n?.weightType ?? null, inputsAgree: s.inputsAgree,
        sqnrDb: c.sqnrDb, localDb: c.local?.sqnrDb ?? null, cosine: c.cosine,
        relL2: c.relL2 ?? (c.sqnrDb === null ? null : Number.isFinite(c.sqnrDb) ? 10 ** (-c.sqnrDb / 20) : 0),
        maxAbsDiff: c.maxAbsDiff, nBeyond: c.nBeyond,
      });
    }
  }
  return rows;
}

// Worst first for each metric: low SQNR / cosine, high relative error / |Δ| / count beyond.
export const WORST_FIRST: Record<SortKey, 'asc' | 'desc'> = {
  sqnrDb: 'asc', localDb: 'asc', cosine: 'asc', relL2: 'desc', maxAbsDiff: 'desc', nBeyond: 'desc', step: 'asc', name: 'asc',
};

export function filterRows(rows: NodeRow[], f: RowFilter): NodeRow[] {
  return rows.filter((r) => (f.op === null || r.op === f.op) && (f.weightType === null || r.weightType === f.weightType) &&
                            (f.includeInputsDiffer || r.inputsAgree));
}

// Missing values sort last in either direction; ties keep execution order (step, node).
export function sortRows(rows: NodeRow[], key: SortKey, dir: 'asc' | 'desc'): NodeRow[] {
  const sign = dir === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = a[key], y = b[key];
    if (x === null && y !== null) return 1;
    if (y === null && x !== null) return -1;
    if (x !== null && y !== null && x !== y) return (typeof x === 'string' ? x.localeCompare(y as string) : (x as number) - (y as number)) * sign;
    return a.step - b.step || a.node - b.node;
  });
}
