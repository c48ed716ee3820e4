// Derived graph facts shared by both parsers and the views.
import type { GraphNode, TraceGraph } from './types';

export function makeGraph(id: string, phase: string, nTokens: number, fused: boolean, nodes: GraphNode[]): TraceGraph {
  const consumers: number[][] = nodes.map(() => []);
  for (const n of nodes)
    for (const s of n.src) if (s >= 0 && s < nodes.length && !consumers[s].includes(n.id)) consumers[s].push(n.id);
  return { id, phase, nTokens, fused, nodes, consumers };
}

// "blk.12.attn_q" → 12; names outside the blocks → -1.
export function layerFromName(name: string): number {
  const m = /^blk\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : -1;
}

// Which part of the block a node belongs to, for the filters.
export type NodePath = 'attention' | 'ffn' | 'kv' | 'other';

export function nodePath(n: GraphNode): NodePath {
  const short = n.name.replace(/^blk\.\d+\./, '');
  if (n.op === 'kv_store' || /^kv|_cache/.test(short)) return 'kv';
  if (/^(attn|q_|k_|v_)/.test(short) || n.op === 'rope' || n.op === 'attention') return 'attention';
  if (/^ffn/.test(short) || n.op === 'swiglu' || n.op === 'silu') return 'ffn';
  return 'other';
}

export function shortName(n: GraphNode): string {
  return n.name.replace(/^blk\.\d+\./, '');
}
