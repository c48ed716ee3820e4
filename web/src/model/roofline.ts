// One step's roofline: the twin of recorder/step_roofline.cpp. The step's kernels grouped by the
// nodes they compute (a fused kernel's `covers` joins every kernel of those nodes), each group's
// work (node-work.ts summed), GPU time, the time at its roof and the fraction of it achieved.
import { peakOpsPerS, traceRoofs, type Roofs } from './device-roofs';
import { nodeWork, OPS_KINDS, type OpsKind, type StepShape } from './node-work';
import type { Kernel, Step, Trace } from './types';

export interface RooflinePoint {
  node: number;               // the group's last node: the one its kernels are attributed to
  nodes: number[];            // every node its kernels compute, ascending
  bytes: number; ops: number;
  opsByKind: Record<OpsKind, number>;
  kind: OpsKind;              // the kind with the most ops: the ceiling the point is drawn against
  gpuUs: number;
  roofUs: number | null;      // max(bytes / bandwidth, Σ ops / peak of their kind); null: roofs unknown
  fraction: number | null;    // roofUs / gpuUs
  lostUs: number | null;      // gpuUs − roofUs
  bandwidthBound: boolean;
}

export const intensity = (p: RooflinePoint) => (p.bytes > 0 ? p.ops / p.bytes : 0);

export function stepShape(t: Trace, step: Step): StepShape {
  const h = t.meta.hparams, num = (k: string) => (typeof h[k] === 'number' ? (h[k] as number) : 0);
  const mk = t.meta.raw.matmul_kernels as Record<string, unknown> | undefined;
  const perPhase = mk && typeof mk === 'object' ? mk[step.phase] : undefined;
  return {
    pos: step.pos, nHead: num('n_head'), nHeadKv: num('n_head_kv'), headDim: num('head_dim'),
    backend: t.meta.backend, matmulPath: t.meta.matmulPath, phase: step.phase,
    matmulKernels: perPhase && typeof perPhase === 'object' ? (perPhase as Record<string, unknown>) : null,
  };
}

function applyRoofs(p: RooflinePoint, r: Roofs): void {
  let computeS = 0, computeKnown = true;
  for (const k of OPS_KINDS) {
    if (p.opsByKind[k] <= 0) continue;
    const peak = peakOpsPerS(r, k);
    if (peak === null) computeKnown = false;
    else computeS += p.opsByKind[k] / peak;
  }
  // Without a bandwidth or a compute peak the roof is not known: nothing rather than half.
  if (r.bandwidthGbs === null || !computeKnown || p.gpuUs <= 0) return;
  const memS = p.bytes / (r.bandwidthGbs * 1e9);
  p.bandwidthBound = memS >= computeS;
  p.roofUs = Math.max(memS, computeS) * 1e6;
  p.fraction = p.roofUs / p.gpuUs;
  p.lostUs = p.gpuUs - p.roofUs;
}

const kernelNodes = (k: Kernel) => (k.covers?.length ? k.covers : [k.node]);

// Cached per kernel list (a sliced trace replaces a step's list when its records arrive).
const cache = new WeakMap<Kernel[], RooflinePoint[]>();

export function stepRoofline(t: Trace, step: Step): RooflinePoint[] {
  let pts = cache.get(step.kernels);
  if (pts) return pts;
  const nodes = t.graphs.get(step.graphId)?.nodes ?? [];
  const inGraph = (id: number) => id >= 0 && id < nodes.length;
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    if (!parent.has(x)) parent.set(x, x);
    const p = parent.get(x)!;
    if (p === x) return x;
    const root = find(p);
    parent.set(x, root);
    return root;
  };
  const ns = new Map<number, number>();   // kernel time by each kernel's first node
  for (const k of step.kernels) {
    if (!inGraph(k.node)) continue;
    const ids = kernelNodes(k);
    if (!ids.every(inGraph)) continue;
    for (const id of ids) parent.set(find(id), find(ids[0]));
    ns.set(ids[0], (ns.get(ids[0]) ?? 0) + k.durationNs);
  }
  const groups = new Map<number, RooflinePoint>();
  const group = (root: number) => {
    let p = groups.get(root);
    if (!p) {
      p = { node: -1, nodes: [], bytes: 0, ops: 0, opsByKind: { int8: 0, f16: 0, f32: 0 }, kind: 'f32', gpuUs: 0,
            roofUs: null, fraction: null, lostUs: null, bandwidthBound: false };
      groups.set(root, p);
    }
    return p;
  };
  for (const id of [...parent.keys()]) group(find(id)).nodes.push(id);
  for (const [id, t0] of ns) group(find(id)).gpuUs += t0 / 1000;
  const shape = stepShape(t, step), roofs = traceRoofs(t.meta);
  pts = [...groups.values()];
  for (const p of pts) {
    p.nodes.sort((a, b) => a - b);
    p.node = p.nodes[p.nodes.length - 1];
    for (const id of p.nodes) {
      const w = nodeWork(nodes, id, shape);
      p.bytes += w.bytes; p.ops += w.ops; p.opsByKind[w.kind] += w.ops;
    }
    if (p.ops > 0) p.kind = OPS_KINDS.reduce((a, k) => (p.opsByKind[k] > p.opsByKind[a] ? k : a), 'int8' as OpsKind);
    applyRoofs(p, roofs);
  }
  pts.sort((a, b) => a.node - b.node);
  cache.set(step.kernels, pts);
  return pts;
}

// The point whose kernels compute `node` in this step, or null.
export function pointOfNode(t: Trace, step: Step, node: number): RooflinePoint | null {
  return stepRoofline(t, step).find((p) => p.nodes.includes(node)) ?? null;
}

// The worst points by GPU time lost against the roof (by GPU time when the roofs are unknown).
export function worstPoints(points: RooflinePoint[], n: number): RooflinePoint[] {
  const key = (p: RooflinePoint) => p.lostUs ?? p.gpuUs;
  return [...points].sort((a, b) => key(b) - key(a)).slice(0, n);
}
