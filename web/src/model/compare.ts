// The comparison of two traces as minfer-viz serves it (/api/compare, the recorder's diff
// output — docs/trace-format.md "Comparison output"). Nothing is recomputed here.
import { Checker, type Obj } from './checked';

export interface CompareNode {
  id: number; name: string; op: string;
  relErr: Record<string, number | null>;
  maxAbsDiff: number | null; cosine: number | null;
  sqnrDb: number | null;      // +Infinity: identical grids
  timeUsA: number | null; timeUsB: number | null;
}

export interface CompareStep {
  index: number; tokenA: number | null; tokenB: number | null; agree: boolean;
  klTopk: number | null; timeMsA: number | null; timeMsB: number | null;
  nodes: Map<number, CompareNode>;
}

export interface Comparison {
  a: { file: string; matmulPath: string }; b: { file: string; matmulPath: string };
  threshold: { metric: string; value: number };
  firstDivergent: { step: number; node: number; name: string; sqnrDb: number | null } | null;
  steps: CompareStep[];
  tokenAgreement: number | null;
  opTimes: { op: string; usA: number; usB: number }[];
}

export function parseComparison(json: unknown, source: string): Comparison {
  const c = new Checker(source);
  const r = c.obj(json, '(top level)');
  if (typeof r.error === 'string') c.fail('', r.error);
  const side = (v: unknown, p: string) => {
    const o = c.obj(v, p);
    return { file: c.optStr(o.file, `${p}.file`) ?? '', matmulPath: c.optStr(o.matmul_path, `${p}.matmul_path`) ?? '' };
  };
  const th = c.obj(r.threshold ?? { metric: 'sqnr_db', value: 30 }, 'threshold');
  let first: Comparison['firstDivergent'] = null;
  if (r.first_divergent) {
    const f = c.obj(r.first_divergent, 'first_divergent');
    first = { step: c.int(f.step, 'first_divergent.step'), node: c.int(f.node, 'first_divergent.node'),
              name: c.optStr(f.name, 'first_divergent.name') ?? '', sqnrDb: c.optNum(f.sqnr_db, 'first_divergent.sqnr_db') };
  }
  return {
    a: side(r.a, 'a'), b: side(r.b, 'b'),
    threshold: { metric: c.optStr(th.metric, 'threshold.metric') ?? 'sqnr_db', value: c.num(th.value, 'threshold.value') },
    firstDivergent: first,
    steps: c.arr(r.steps ?? [], 'steps').map((s, i) => parseStep(c, c.obj(s, `steps[${i}]`), `steps[${i}]`)),
    tokenAgreement: c.optNum(r.token_agreement, 'token_agreement'),
    opTimes: c.arr(r.op_times ?? [], 'op_times').map((o, i) => {
      const t = c.obj(o, `op_times[${i}]`);
      return { op: c.str(t.op, `op_times[${i}].op`), usA: c.optNum(t.us_a, `op_times[${i}].us_a`) ?? 0, usB: c.optNum(t.us_b, `op_times[${i}].us_b`) ?? 0 };
    }),
  };
}

function parseStep(c: Checker, s: Obj, p: string): CompareStep {
  const nodes = new Map<number, CompareNode>();
  c.arr(s.nodes ?? [], `${p}.nodes`).forEach((n, i) => {
    const o = c.obj(n, `${p}.nodes[${i}]`), np = `${p}.nodes[${i}]`;
    const relErr: Record<string, number | null> = {};
    for (const [k, v] of Object.entries(c.obj(o.rel_err ?? {}, `${np}.rel_err`))) relErr[k] = c.optNum(v, `${np}.rel_err.${k}`);
    const maxAbs = c.optNum(o.max_abs_diff, `${np}.max_abs_diff`);
    let sqnr = c.optNum(o.sqnr_db, `${np}.sqnr_db`);
    if (sqnr === null && maxAbs === 0) sqnr = Infinity;   // identical grids: JSON cannot say ∞
    const id = c.int(o.id, `${np}.id`);
    nodes.set(id, {
      id, name: c.optStr(o.name, `${np}.name`) ?? '', op: c.optStr(o.op, `${np}.op`) ?? '',
      relErr, maxAbsDiff: maxAbs, cosine: c.optNum(o.cosine, `${np}.cosine`), sqnrDb: sqnr,
      timeUsA: c.optNum(o.time_us_a, `${np}.time_us_a`), timeUsB: c.optNum(o.time_us_b, `${np}.time_us_b`),
    });
  });
  return {
    index: c.int(s.index, `${p}.index`),
    tokenA: c.optNum(s.token_a, `${p}.token_a`), tokenB: c.optNum(s.token_b, `${p}.token_b`),
    agree: s.agree === true, klTopk: c.optNum(s.kl_topk, `${p}.kl_topk`),
    timeMsA: c.optNum(s.time_ms_a, `${p}.time_ms_a`), timeMsB: c.optNum(s.time_ms_b, `${p}.time_ms_b`),
    nodes,
  };
}
