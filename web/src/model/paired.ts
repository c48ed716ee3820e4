// A paired trace (v3, meta.compare): run A and its reference run B recorded in lockstep on the
// same tokens, with full-tensor metrics per node (cmp, cmp.local) and B's summaries (ref,
// ref_logits). This file turns it into the two things the comparison views read: B as a Trace
// of its own, and the Comparison, both from the recorded values (nothing is recomputed).
import { SQNR_CAP_DB, type CompareNode, type CompareStep, type Comparison, type LocalRef, type NodeRef } from './compare';
import type { NodeRecord, Step, Trace } from './types';

export const DEFAULT_THRESHOLD_DB = 30;

export function isPaired(t: Trace): boolean {
  return !!t.meta.compare;
}

// Run B as a trace: the same graphs and tokens, B's node summaries and logits.
export function referenceTrace(t: Trace): Trace {
  const path = t.meta.compare?.path ?? 'reference';
  const steps: Step[] = t.steps.map((s) => {
    const records = new Map<number, NodeRecord>();
    for (const r of s.records.values()) {
      if (r.ref) records.set(r.id, { id: r.id, timeUs: null, startUs: null, stats: r.ref.stats, grid: r.ref.grid, hist: r.ref.hist, noOutput: null });
      else if (r.noOutput) records.set(r.id, { id: r.id, timeUs: null, startUs: null, stats: null, grid: null, hist: null, noOutput: r.noOutput });
    }
    return { index: s.index, phase: s.phase, graphId: s.graphId, pos: s.pos, tokens: s.tokens, timeMs: null, records,
             nodesSkipped: s.nodesSkipped, logits: s.refLogits ?? null, kernels: [] };
  });
  return {
    name: `${t.name} · reference (${path})`, version: t.version, complete: t.complete,
    meta: { ...t.meta, matmulPath: path, backend: t.meta.compare?.backend || t.meta.backend, compare: null },
    graphs: t.graphs, steps, timings: null, warnings: [],
  };
}

export function pairedComparison(t: Trace, thresholdDb = DEFAULT_THRESHOLD_DB): Comparison {
  const ref = t.meta.compare!;
  let firstDivergent: NodeRef | null = null;
  let firstLocal: LocalRef | null = null, firstOwnError: LocalRef | null = null, worstLocal: LocalRef | null = null;
  let identical = true, agree = 0;
  const steps: CompareStep[] = t.steps.map((s) => {
    const g = t.graphs.get(s.graphId)!;
    const nodes = new Map<number, CompareNode>();
    // Execution order: records are in it, and the graph's node ids follow it.
    for (const n of g.nodes) {
      const r = s.records.get(n.id);
      if (!r?.cmp) continue;
      const m = r.cmp;
      nodes.set(n.id, {
        id: n.id, name: n.name, op: n.op, sqnrDb: m.sqnrDb, cosine: m.cosine, relL2: m.relL2, maxAbsDiff: m.maxAbsDiff,
        maxAbsAt: m.maxAbsAt, nBeyond: m.nBeyond, local: m.local, relErr: statRelErr(r),
        timeUsA: r.timeUs, timeUsB: null,
      });
      if (m.maxAbsDiff !== 0 || (m.sqnrDb !== null && m.sqnrDb < SQNR_CAP_DB)) identical = false;
      if (!firstDivergent && m.sqnrDb !== null && m.sqnrDb < thresholdDb)
        firstDivergent = { step: s.index, node: n.id, name: n.name, sqnrDb: m.sqnrDb };
      const ld = m.local?.sqnrDb ?? null;
      if (ld === null || ld >= SQNR_CAP_DB) continue;   // the node adds no error itself
      const here: LocalRef = { step: s.index, node: n.id, name: n.name, sqnrDb: m.sqnrDb, localDb: ld };
      firstOwnError ??= here;
      if (!firstLocal && ld < thresholdDb) firstLocal = here;
      if (!worstLocal || ld < worstLocal.localDb) worstLocal = here;
    }
    const tokA = s.logits?.chosen ?? null, tokB = s.refLogits?.chosen ?? null;
    const same = tokA === tokB;
    if (same) agree++;
    // Exact only with a KL of 0: an infinite one (null) or none recorded is not (as diff_paired
    // decides; traces/test-vectors/paired-divergence.json holds both to the same answers).
    if (!same || s.compare?.kl !== 0) identical = false;
    return {
      index: s.index, tokenA: tokA, tokenB: tokB, agree: same,
      inputsAgree: true,   // lockstep: B is fed the tokens A samples
      klTopk: null, kl: s.compare?.kl ?? null, marginA: s.compare?.marginA ?? null, marginB: s.compare?.marginB ?? null,
      timeMsA: s.timeMs, timeMsB: null, nodes,
    };
  });
  return {
    a: { file: t.name, matmulPath: t.meta.matmulPath }, b: { file: `${t.name} (reference)`, matmulPath: ref.path },
    reference: 'b', metricsSource: 'full', paired: true, identical: identical && steps.length > 0,
    threshold: { metric: 'sqnr_db', value: thresholdDb },
    firstDivergent: identical ? null : firstDivergent, firstLocal: identical ? null : firstLocal,
    firstOwnError: identical ? null : firstOwnError, worstLocal: identical ? null : worstLocal,
    steps, tokenAgreement: steps.length ? agree / steps.length : null, opTimes: [],
  };
}

// |A − B| / max(|A|, |B|) of each statistic, as the two-trace diff reports it.
function statRelErr(r: NodeRecord): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  const a = r.stats, b = r.ref?.stats;
  if (!a || !b) return out;
  for (const k of ['min', 'max', 'mean', 'absmean', 'std'] as const) {
    const x = a[k], y = b[k];
    if (x === null || y === null || !Number.isFinite(x) || !Number.isFinite(y)) { out[k] = null; continue; }
    const d = Math.max(Math.abs(x), Math.abs(y));
    out[k] = d === 0 ? 0 : Math.abs(x - y) / d;
  }
  return out;
}
