// Graph layout, computed once per graph structure: one row per transformer layer (plus a head
// row for inputs and a tail row for the output), nodes ranked left→right by dependency depth
// inside their row. Positions are row-relative so collapsing a layer only moves rows.
import { maxOf } from './extent';
import type { TraceGraph } from './types';

export const NODE_W = 124, NODE_H = 34, RANK_W = 150, LANE_H = 42, ROW_PAD_TOP = 26, ROW_PAD_BOTTOM = 10;
export const LABEL_W = 92, COLLAPSED_H = 30;

export interface LayoutRow {
  key: string;              // "head", "L0", …, "tail"
  label: string;
  layer: number;            // -1 for head/tail
  nodes: number[];
  height: number;           // expanded height
}

export interface NodePos { x: number; y: number; row: number; rank: number }

export interface Edge { from: number; to: number; row: number; path: string; skip: boolean }

export interface GraphLayout {
  rows: LayoutRow[];
  pos: Map<number, NodePos>;
  edges: Edge[];            // within a row
  spineIn: number[];        // nodes that read the residual stream from an earlier row
  spineOut: number[];       // nodes whose output leaves their row (a later row reads it)
  width: number;
  signature: string;
}

export function graphSignature(g: TraceGraph): string {
  return g.nodes.map((n) => `${n.name}:${n.op}:${n.fusedInto}`).join('|');
}

export function layoutGraph(g: TraceGraph): GraphLayout {
  const shown = g.nodes.filter((n) => n.fusedInto < 0);
  const firstLayer = shown.find((n) => n.layer >= 0)?.id ?? Infinity;
  const rowKey = (id: number) => {
    const n = g.nodes[id];
    return n.layer >= 0 ? `L${n.layer}` : id < firstLayer ? 'head' : 'tail';
  };
  const rows: LayoutRow[] = [];
  const rowIndex = new Map<string, number>();
  for (const n of shown) {
    const key = rowKey(n.id);
    if (!rowIndex.has(key)) {
      rowIndex.set(key, rows.length);
      rows.push({ key, label: key === 'head' ? 'input' : key === 'tail' ? 'output' : `layer ${n.layer}`, layer: n.layer, nodes: [], height: 0 });
    }
    rows[rowIndex.get(key)!].nodes.push(n.id);
  }
  const pos = new Map<number, NodePos>();
  const edges: Edge[] = [];
  const spineIn: number[] = [], spineOut = new Set<number>();
  let width = 0;
  rows.forEach((row, ri) => {
    const rank = new Map<number, number>();
    for (const id of row.nodes) {
      let r = 0;
      for (const s of g.nodes[id].src) if (rank.has(s)) r = Math.max(r, rank.get(s)! + 1);
      rank.set(id, r);
    }
    const byRank = new Map<number, number[]>();
    for (const id of row.nodes) {
      const r = rank.get(id)!;
      if (!byRank.has(r)) byRank.set(r, []);
      byRank.get(r)!.push(id);
    }
    const lanes = maxOf([...byRank.values()].map((l) => l.length));
    row.height = ROW_PAD_TOP + lanes * LANE_H + ROW_PAD_BOTTOM;
    for (const [r, ids] of byRank) {
      const offset = ((lanes - ids.length) * LANE_H) / 2;
      ids.forEach((id, lane) => pos.set(id, { x: LABEL_W + r * RANK_W, y: ROW_PAD_TOP + offset + lane * LANE_H, row: ri, rank: r }));
      width = Math.max(width, LABEL_W + r * RANK_W + NODE_W + 30);
    }
    for (const id of row.nodes) {
      const n = g.nodes[id];
      for (const s of n.src) {
        if (rank.has(s)) edges.push(edgePath(s, id, ri, pos, rank.get(id)! - rank.get(s)! > 1));
        else if (g.nodes[s] && g.nodes[s].op !== 'input' && !spineIn.includes(id)) { spineIn.push(id); spineOut.add(s); }
      }
    }
  });
  return { rows, pos, edges, spineIn, spineOut: [...spineOut], width, signature: graphSignature(g) };
}

function edgePath(from: number, to: number, row: number, pos: Map<number, NodePos>, skip: boolean): Edge {
  const a = pos.get(from)!, b = pos.get(to)!;
  const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
  let path: string;
  if (skip) {
    // Long edges arc over the nodes in between, through the row's top padding.
    // A cubic's peak sits at y1 + 3/4 (control − y1): put it 10 px below the row top.
    const top = (40 - Math.min(y1, y2)) / 3;
    path = `M${x1},${y1} C${x1 + 40},${top} ${x2 - 40},${top} ${x2},${y2}`;
  } else {
    const mx = (x1 + x2) / 2;
    path = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
  }
  return { from, to, row, path, skip };
}
