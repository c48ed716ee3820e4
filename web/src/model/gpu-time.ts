// Where a step's GPU time went, from its kernel records (CUDA traces, CUPTI): per node, per op,
// the step's GPU span, the busy time and the idle gaps between kernels. The recorder's own step
// figures (trace v3: gpu_ms, gpu_busy_ms, idle_ms, host_ms, kernels_dropped) are shown as
// recorded; the same figures computed here from the kernels stand in when a trace lacks them.
import type { GraphNode, Kernel, Step, Trace } from './types';

export interface Interval { startNs: number; endNs: number }

// A gap in which no kernel ran, between the kernel that ended last before it and the next one.
export interface IdleGap extends Interval { before: Kernel; after: Kernel }

// The merged busy intervals of a set of kernels (overlapping or touching kernels join).
export function busyIntervals(kernels: readonly Kernel[]): Interval[] {
  const sorted = [...kernels].sort((a, b) => a.startNs - b.startNs);
  const out: Interval[] = [];
  for (const k of sorted) {
    const end = k.startNs + k.durationNs, last = out[out.length - 1];
    if (last && k.startNs <= last.endNs) last.endNs = Math.max(last.endNs, end);
    else out.push({ startNs: k.startNs, endNs: end });
  }
  return out;
}

// Idle gaps inside the step's GPU span, in time order.
export function idleGaps(kernels: readonly Kernel[]): IdleGap[] {
  const sorted = [...kernels].sort((a, b) => a.startNs - b.startNs);
  const gaps: IdleGap[] = [];
  let busyEnd = -Infinity, lastEnding: Kernel | null = null;
  for (const k of sorted) {
    if (lastEnding && k.startNs > busyEnd) gaps.push({ startNs: busyEnd, endNs: k.startNs, before: lastEnding, after: k });
    const end = k.startNs + k.durationNs;
    if (end >= busyEnd) { busyEnd = end; lastEnding = k; }
  }
  return gaps;
}

// The kernels of one node in one step, and the span they cover.
export interface NodeKernels { node: number; kernels: Kernel[]; startNs: number; endNs: number; sumNs: number }

export interface KernelGroups {
  nodes: NodeKernels[];     // by first kernel start
  unattributed: Kernel[];   // node -1 (the trace says why in kernel.unattributed)
}

export function groupByNode(kernels: readonly Kernel[]): KernelGroups {
  const by = new Map<number, NodeKernels>();
  const unattributed: Kernel[] = [];
  for (const k of kernels) {
    if (k.node < 0) { unattributed.push(k); continue; }
    let g = by.get(k.node);
    if (!g) { g = { node: k.node, kernels: [], startNs: Infinity, endNs: -Infinity, sumNs: 0 }; by.set(k.node, g); }
    g.kernels.push(k);
    g.startNs = Math.min(g.startNs, k.startNs);
    g.endNs = Math.max(g.endNs, k.startNs + k.durationNs);
    g.sumNs += k.durationNs;
  }
  return { nodes: [...by.values()].sort((a, b) => a.startNs - b.startNs), unattributed };
}

// Per node: the sum of its kernels' durations (µs). Cached per kernel list: a sliced trace
// replaces a step's list when its records arrive.
const sumsCache = new WeakMap<Kernel[], Map<number, number>>();

function kernelSumsUs(kernels: Kernel[]): Map<number, number> {
  let m = sumsCache.get(kernels);
  if (!m) {
    m = new Map();
    for (const k of kernels) if (k.node >= 0) m.set(k.node, (m.get(k.node) ?? 0) + k.durationNs / 1000);
    sumsCache.set(kernels, m);
  }
  return m;
}

// GPU time of a node in a step (µs): the recorded gpu_us, else the sum of its kernels, else null
// (no kernel ran for it, or the step has no kernel records).
export function nodeGpuUs(step: Step, node: number): number | null {
  const rec = step.records.get(node)?.gpuUs;
  if (rec !== undefined && rec !== null) return rec;
  return kernelSumsUs(step.kernels).get(node) ?? null;
}

export interface StepGpu {
  kernels: number;
  unattributed: number;
  gpuMs: number | null;       // first kernel start to last kernel end
  busyMs: number | null;      // union of kernel intervals
  idleMs: number | null;      // gpuMs − busyMs
  eventMs: number | null;     // GPU time between CUDA events around the step
  hostMs: number | null;      // host time spent enqueueing the step (CUDA: launches, not the GPU's work)
  wallMs: number | null;      // the step's wall time (enqueue, GPU, sync)
  dropped: number | null;     // CUPTI records lost
  gaps: number;               // idle gaps between kernels
  note: string | null;        // why the step has no kernel records (recorder's words)
  recorded: boolean;          // the GPU figures come from the trace, not from this file
}

// The GPU figures of a step: as recorded when the trace has them, else computed from the kernels.
export function stepGpu(step: Step): StepGpu {
  const ks = step.kernels, k = kernelFigures(ks);
  const recorded = step.gpuMs !== undefined && step.gpuMs !== null;
  const g = recorded ? step.gpuMs! : k.gpuMs;
  const b = step.gpuBusyMs ?? k.busyMs;
  return {
    kernels: ks.length,
    unattributed: k.unattributed,
    gpuMs: g, busyMs: b,
    idleMs: step.idleMs ?? (g !== null && b !== null ? g - b : null),
    eventMs: step.eventMs ?? null,
    hostMs: step.hostMs ?? null,
    wallMs: step.timeMs,
    dropped: step.kernelsDropped ?? null,
    gaps: k.gaps,
    note: step.kernelsNote ?? null,
    recorded,
  };
}

// What the kernel list alone gives; cached per list (the step table asks for every step on
// every step change).
interface KernelFigures { gpuMs: number | null; busyMs: number | null; gaps: number; unattributed: number }
const figuresCache = new WeakMap<Kernel[], KernelFigures>();

function kernelFigures(ks: Kernel[]): KernelFigures {
  if (!ks.length) return { gpuMs: null, busyMs: null, gaps: 0, unattributed: 0 };
  let f = figuresCache.get(ks);
  if (!f) {
    const iv = busyIntervals(ks);
    f = { gpuMs: (iv[iv.length - 1].endNs - iv[0].startNs) / 1e6, busyMs: iv.reduce((a, i) => a + i.endNs - i.startNs, 0) / 1e6,
          gaps: iv.length - 1, unattributed: ks.filter((k) => k.node < 0).length };
    figuresCache.set(ks, f);
  }
  return f;
}

// A kernel's name as CUPTI reports it is the demangled signature ("void minfer::cuda::(anonymous
// namespace)::mmq_kernel<(minfer::WeightType)2, 1>(unsigned char const*, …)"): the function name
// and template arguments without return type, namespaces and parameter list.
export function shortKernelName(name: string): string {
  let s = name.replace(/^void\s+/, '');
  if (s.endsWith(')')) {   // drop the parameter list: the parenthesis that closes at the end
    let depth = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      if (s[i] === ')') depth++;
      else if (s[i] === '(' && --depth === 0) { if (i > 0) s = s.slice(0, i); break; }
    }
  }
  return s.replace(/\(anonymous namespace\)::/g, '').replace(/\b[A-Za-z_]\w*::/g, '');
}

// The label of a node without GPU time of its own that a fused kernel computes: "fused → name".
export function fusedLabel(step: Step, node: number, nodes: GraphNode[]): string {
  const k = fusedInto(step, node)[0];
  return k ? `fused → ${(nodes[k.node]?.name ?? `#${k.node}`).replace(/^blk\.\d+\./, '')}` : '';
}

// Fused kernels that compute `node` but are attributed to another node (kernel.covers).
export function fusedInto(step: Step, node: number): Kernel[] {
  return step.kernels.filter((k) => k.node !== node && k.covers?.includes(node));
}

// What a kernel computes, as op types: its node's op, or for a fused kernel the ops of every node
// it covers joined in order ("rms_norm+matmul"); without a node, the trace's reason in
// parentheses ("(recorder: node and logits summaries)"), or "(unattributed)" when it gives none.
export function kernelOp(k: Kernel, nodes: GraphNode[]): string {
  if (k.node < 0) return `(${k.unattributed || 'unattributed'})`;
  const ops: string[] = [];
  for (const id of k.covers?.length ? k.covers : [k.node]) {
    const op = nodes[id]?.op ?? `node ${id}`;
    if (!ops.includes(op)) ops.push(op);
  }
  return ops.join('+');
}

// GPU time per op type (µs, kernelOp), largest first.
export function gpuTimePerOp(step: Step, nodes: GraphNode[]): [string, number][] {
  const m = new Map<string, number>();
  for (const k of step.kernels) {
    const op = kernelOp(k, nodes);
    m.set(op, (m.get(op) ?? 0) + k.durationNs / 1000);
  }
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

// The trace holds GPU timings somewhere (a colour mode and the GPU sections make sense).
export function traceHasGpuTimes(t: Trace): boolean {
  if (t.meta.cupti?.enabled) return true;
  for (const s of t.steps) {
    if (s.kernels.length || (s.gpuMs !== undefined && s.gpuMs !== null)) return true;
  }
  return false;
}

// Node GPU times exist (the GPU time colour makes sense): kernel records on some step. A trace
// whose CUPTI was off has none, whatever else it timed.
export function traceHasKernels(t: Trace): boolean {
  if (t.meta.cupti) return t.meta.cupti.enabled;
  return t.steps.some((s) => s.kernels.length > 0);
}

// Why a step shows no kernels, in words: CUPTI off for the run (with its reason), else the
// step's own note, else the steps CUPTI covered, else the backend.
export function whyNoKernels(t: Trace, step: Step): string {
  if (step.pending) return `Step ${step.index} is still loading.`;
  const c = t.meta.cupti;
  if (c && !c.enabled) return `No kernel records: CUPTI was off for this run${c.reason ? ` (${c.reason})` : ''}.`;
  if (step.kernelsNote) return `No kernel records in step ${step.index}: ${step.kernelsNote}.`;
  if (c?.steps && c.steps !== 'all') return `No kernel records in step ${step.index}: CUPTI recorded steps ${c.steps} only${c.otherSteps === 'events' ? ' (the others were timed with CUDA events)' : ''}.`;
  if (t.meta.backend === 'cuda') return `No kernel records in step ${step.index}.`;
  return `No kernel records: this trace was recorded on the ${t.meta.backend || 'unknown'} backend (CUPTI kernel timings exist only for cuda runs).`;
}
