// Derived graph facts shared by both parsers and the views.
import type { GraphNode, TraceGraph } from './types';

export function makeGraph(id: string, phase: string, nTokens: number, fused: boolean, nodes: GraphNode[]): TraceGraph {
  const consumers: number[][] = nodes.map(() => []);
  for (const n of nodes)
    for (const s of n.src) if (s >= 0 && s < nodes.length && !consumers[s].includes(n.id)) consumers[s].push(n.id);
  return { id, phase, nTokens, fused, nodes, consumers };
}

// "blk.12.attn_q" → 12, also inside upstream names ("matmul_blk.12.attn_q.weight");
// names outside the blocks → -1.
export function layerFromName(name: string): number {
  const m = /(?:^|[^a-zA-Z0-9])blk\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : -1;
}

// A node's name in deep links: its name, with the occurrence when the name repeats (upstream v1
// graphs call every layer's norm "rms_norm"): "rms_norm~3" is the fourth. The prefill and decode
// graphs repeat a name equally often, so the key names the same node in both.
export function nodeKey(g: TraceGraph, id: number): string {
  const name = g.nodes[id].name;
  const same = g.nodes.filter((n) => n.name === name);
  return same.length === 1 ? name : `${name}~${same.findIndex((n) => n.id === id)}`;
}

export function findNodeByKey(g: TraceGraph, key: string): number {
  const m = /^(.*)~(\d+)$/.exec(key);
  const same = g.nodes.filter((n) => n.name === (m ? m[1] : key));
  return same[m ? Number(m[2]) : 0]?.id ?? -1;
}

// Which part of the block a node belongs to, for the filters.
export type NodePath = 'attention' | 'ffn' | 'kv' | 'other';

export function nodePath(n: GraphNode): NodePath {
  const short = shortName(n);
  if (n.op === 'kv_store' || /(^|_)kv|_cache/.test(short)) return 'kv';
  if (/(^|_)(attn|q_|k_|v_|qkv)/.test(short) || /^rope/.test(n.op) || n.op === 'attention') return 'attention';
  if (/(^|_)ffn/.test(short) || n.op === 'swiglu' || n.op === 'silu') return 'ffn';
  return 'other';
}

// The name without its layer prefix: "blk.3.attn_q" → "attn_q",
// "matmul_blk.3.attn_q.weight" (upstream v1) → "matmul_attn_q".
export function shortName(n: GraphNode): string {
  return n.name.replace(/^blk\.\d+\./, '').replace(/^(\w+?)_blk\.\d+\.(.*?)(\.weight)?$/, '$1_$2');
}
