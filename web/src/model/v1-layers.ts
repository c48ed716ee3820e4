// The transformer layer of each node of an upstream (version 1) graph, found as upstream's own
// page finds it. Real v1 graphs name the layer on few nodes: matmuls embed their weight in the
// name ("matmul_blk.3.attn_q.weight"), norms and fused nodes name weights in meta / detail, only
// `attn` has meta.layer and the KV-cache nodes detail.layer; `rms_norm`, `rope`, `add`, `silu`
// repeat the same name in every layer and name none.
import type { Json, Obj } from './checked';

const BLOCK = /blk\.(\d+)\./;
const BLOCK_WEIGHT = /(?:^|[^a-zA-Z0-9])blk\.\d+\./;

// 1. `blk.N.` in the name or any string value of meta / detail; 2. meta.layer / detail.layer;
// 3. a node that names a weight outside the blocks (token_embd, output_norm, output) is outside
//    them: upstream has no head/tail rows and would pull the final norm into the last layer;
// 4. otherwise the largest layer among its sources (a residual add or a rope joins its layer),
//    then a node that only inherited a layer and whose every consumer names one later layer
//    moves there (a norm that names no weight feeds the projections of the layer it belongs
//    to; a residual add also feeds the next layer's add, which names none, so it stays).
export function upstreamLayers(nodes: Obj[], src: number[][]): number[] {
  const layer: number[] = [];
  const inherited: boolean[] = [];
  nodes.forEach((n, i) => {
    const own = ownLayer(n);
    inherited.push(own === null && !namesGlobalWeight(n));
    layer.push(own ?? (inherited[i] ? Math.max(-1, ...src[i].map((s) => layer[s])) : -1));
  });
  const consumers: number[][] = nodes.map(() => []);
  src.forEach((ss, i) => ss.forEach((s) => consumers[s].push(i)));
  nodes.forEach((_, i) => {
    if (!inherited[i] || consumers[i].length === 0 || consumers[i].some((c) => inherited[c])) return;
    const next = new Set(consumers[i].map((c) => layer[c]));
    const only = next.size === 1 ? [...next][0] : -1;
    if (only > layer[i]) layer[i] = only;
  });
  return layer;
}

function ownLayer(n: Obj): number | null {
  for (const text of [n.name, ...strings(n.meta), ...strings(n.detail)]) {
    const m = typeof text === 'string' ? BLOCK.exec(text) : null;
    if (m) return Number(m[1]);
  }
  for (const o of [n.meta, n.detail]) {
    const v = isObj(o) ? o.layer : undefined;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  }
  return null;
}

function namesGlobalWeight(n: Obj): boolean {
  const w = isObj(n.meta) ? n.meta.weight : undefined;
  return typeof w === 'string' && w !== '' && !BLOCK_WEIGHT.test(w);
}

function strings(o: Json | undefined): Json[] {
  return isObj(o) ? Object.values(o).filter((v) => typeof v === 'string') : [];
}

function isObj(o: Json | undefined): o is Obj {
  return typeof o === 'object' && o !== null && !Array.isArray(o);
}
