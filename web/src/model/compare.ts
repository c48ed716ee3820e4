// The comparison of run A with run B that every comparison view reads. Two sources fill it:
// - two separate traces: minfer-viz /api/compare (the recorder's diff output,
//   docs/trace-format.md "Comparison output"), metrics from the sampled value grids;
// - one paired trace (v3): model/paired.ts, full-tensor metrics the recorder computed.
// Nothing here recomputes a metric; it reads, aligns and labels them.
import { Checker, type Obj } from './checked';
import type { ErrorMetrics } from './types';

// "grid": from the sampled value grids (a 64-column sample of each row), "full": the whole tensor.
export type MetricsSource = 'grid' | 'full';

export interface CompareNode extends ErrorMetrics {
  id: number; name: string; op: string;
  relErr: Record<string, number | null>;   // relative error of each statistic
  maxAbsAt: [number, number] | null;
  nBeyond: number | null;
  local: ErrorMetrics | null;              // paired traces: the error the node adds itself
  timeUsA: number | null; timeUsB: number | null;
}

export interface CompareStep {
  index: number;
  tokenA: number | null; tokenB: number | null; agree: boolean;
  inputsAgree: boolean;       // same input tokens here and on every earlier step
  klTopk: number | null;      // two traces: KL over the union of both top-k lists
  kl: number | null;          // paired: KL(A‖B) over the full vocabulary
  marginA: number | null; marginB: number | null;
  timeMsA: number | null; timeMsB: number | null;
  nodes: Map<number, CompareNode>;
}

export interface NodeRef { step: number; node: number; name: string; sqnrDb: number | null }
export type LocalRef = NodeRef & { localDb: number };   // with the node's local (own) SQNR

export interface Comparison {
  a: { file: string; matmulPath: string }; b: { file: string; matmulPath: string };
  reference: 'a' | 'b';       // the run the SQNR and relative errors are measured against
  metricsSource: MetricsSource;
  paired: boolean;            // one paired trace (lockstep, teacher forced)
  identical: boolean;         // every compared node and the logits agree exactly
  threshold: { metric: string; value: number };
  firstDivergent: NodeRef | null;   // first node past the threshold, among steps whose inputs agree
  firstLocal: LocalRef | null;      // paired: first node whose OWN error passes it
  firstOwnError: LocalRef | null;   // paired: first node whose own error is not exact (where error enters)
  worstLocal: LocalRef | null;      // paired: the node that adds the most error itself (lowest local SQNR)
  steps: CompareStep[];
  tokenAgreement: number | null;
  opTimes: { op: string; usA: number; usB: number }[];
}

export const SQNR_CAP_DB = 200;   // the writers cap SQNR here: 200 = identical at the recorded precision

// `swapped`: the server was asked for (b, a) so that its first run, the one its SQNR is
// measured against, is our B: sides are swapped back and the reference is B.
export function parseComparison(json: unknown, source: string, swapped = false): Comparison {
  const c = new Checker(source);
  const r = c.obj(json, '(top level)');
  if (typeof r.error === 'string') c.fail('', r.error);
  const side = (v: unknown, p: string) => {
    const o = c.obj(v, p);
    return { file: c.optStr(o.file, `${p}.file`) ?? '', matmulPath: c.optStr(o.matmul_path, `${p}.matmul_path`) ?? '' };
  };
  const th = c.obj(r.threshold ?? { metric: 'sqnr_db', value: 30 }, 'threshold');
  let first: NodeRef | null = null;
  if (r.first_divergent) {
    const f = c.obj(r.first_divergent, 'first_divergent');
    first = { step: c.int(f.step, 'first_divergent.step'), node: c.int(f.node, 'first_divergent.node'),
              name: c.optStr(f.name, 'first_divergent.name') ?? '', sqnrDb: c.optNum(f.sqnr_db, 'first_divergent.sqnr_db') };
  }
  const source_ = c.optStr(r.metrics_source, 'metrics_source') ?? 'grid';
  if (source_ !== 'grid' && source_ !== 'full') c.fail('metrics_source', `expected "grid" or "full", got "${source_}"`);
  const steps = c.arr(r.steps ?? [], 'steps').map((s, i) => parseStep(c, c.obj(s, `steps[${i}]`), `steps[${i}]`));
  const out: Comparison = {
    a: side(r.a, 'a'), b: side(r.b, 'b'),
    reference: 'a',
    metricsSource: source_ as MetricsSource,
    paired: false,
    identical: typeof r.identical === 'boolean' ? r.identical : allIdentical(steps),
    threshold: { metric: c.optStr(th.metric, 'threshold.metric') ?? 'sqnr_db', value: c.num(th.value, 'threshold.value') },
    firstDivergent: first,
    firstLocal: null, firstOwnError: null, worstLocal: null,   // two traces have no local errors
    steps,
    tokenAgreement: c.optNum(r.token_agreement, 'token_agreement'),
    opTimes: c.arr(r.op_times ?? [], 'op_times').map((o, i) => {
      const t = c.obj(o, `op_times[${i}]`);
      return { op: c.str(t.op, `op_times[${i}].op`), usA: c.optNum(t.us_a, `op_times[${i}].us_a`) ?? 0, usB: c.optNum(t.us_b, `op_times[${i}].us_b`) ?? 0 };
    }),
  };
  if (out.identical) out.firstDivergent = null;   // an identical pair has nothing to name
  return swapped ? swapSides(out) : out;
}

function parseStep(c: Checker, s: Obj, p: string): CompareStep {
  const nodes = new Map<number, CompareNode>();
  c.arr(s.nodes ?? [], `${p}.nodes`).forEach((n, i) => {
    const o = c.obj(n, `${p}.nodes[${i}]`), np = `${p}.nodes[${i}]`;
    const relErr: Record<string, number | null> = {};
    for (const [k, v] of Object.entries(c.obj(o.rel_err ?? {}, `${np}.rel_err`))) relErr[k] = c.optNum(v, `${np}.rel_err.${k}`);
    const maxAbs = c.optNum(o.max_abs_diff, `${np}.max_abs_diff`);
    let sqnr = c.optNum(o.sqnr_db, `${np}.sqnr_db`);
    if (sqnr === null && maxAbs === 0) sqnr = Infinity;   // identical grids (older servers): JSON cannot say ∞
    const id = c.int(o.id, `${np}.id`);
    nodes.set(id, {
      id, name: c.optStr(o.name, `${np}.name`) ?? '', op: c.optStr(o.op, `${np}.op`) ?? '',
      relErr, maxAbsDiff: maxAbs, cosine: c.optNum(o.cosine, `${np}.cosine`), sqnrDb: sqnr,
      relL2: c.optNum(o.rel_l2, `${np}.rel_l2`), maxAbsAt: null, nBeyond: c.optNum(o.n_beyond, `${np}.n_beyond`), local: null,
      timeUsA: c.optNum(o.time_us_a, `${np}.time_us_a`), timeUsB: c.optNum(o.time_us_b, `${np}.time_us_b`),
    });
  });
  return {
    index: c.int(s.index, `${p}.index`),
    tokenA: c.optNum(s.token_a, `${p}.token_a`), tokenB: c.optNum(s.token_b, `${p}.token_b`),
    agree: s.agree === true,
    inputsAgree: s.inputs_agree !== false,
    klTopk: c.optNum(s.kl_topk, `${p}.kl_topk`), kl: c.optNum(s.kl, `${p}.kl`),
    marginA: null, marginB: null,
    timeMsA: c.optNum(s.time_ms_a, `${p}.time_ms_a`), timeMsB: c.optNum(s.time_ms_b, `${p}.time_ms_b`),
    nodes,
  };
}

export function isIdenticalDb(db: number | null): boolean {
  return db !== null && db >= SQNR_CAP_DB;
}

function allIdentical(steps: CompareStep[]): boolean {
  if (steps.length === 0) return false;
  for (const s of steps) {
    if (!s.agree || !s.inputsAgree) return false;
    for (const n of s.nodes.values()) if (!isIdenticalDb(n.sqnrDb) || (n.maxAbsDiff ?? 0) !== 0) return false;
  }
  return true;
}

// A and B trade places (labels, tokens, times); the metrics keep their values, measured
// against the run that is now B.
export function swapSides(cmp: Comparison): Comparison {
  return {
    ...cmp, a: cmp.b, b: cmp.a, reference: cmp.reference === 'a' ? 'b' : 'a',
    opTimes: cmp.opTimes.map((o) => ({ op: o.op, usA: o.usB, usB: o.usA })),
    steps: cmp.steps.map((s) => ({
      ...s, tokenA: s.tokenB, tokenB: s.tokenA, marginA: s.marginB, marginB: s.marginA, timeMsA: s.timeMsB, timeMsB: s.timeMsA,
      nodes: new Map([...s.nodes].map(([k, n]) => [k, { ...n, timeUsA: n.timeUsB, timeUsB: n.timeUsA }])),
    })),
  };
}

// The default reference: the float path when exactly one side computes in float.
export function defaultReference(pathA: string, pathB: string): 'a' | 'b' {
  const float = (p: string) => p === 'f16' || p === 'f32';
  return float(pathA) && !float(pathB) ? 'a' : 'b';
}

export function stepOf(cmp: Comparison | null, index: number): CompareStep | undefined {
  if (!cmp) return undefined;
  const s = cmp.steps[index];
  return s?.index === index ? s : cmp.steps.find((x) => x.index === index);
}
