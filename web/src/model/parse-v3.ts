// The version-3 additions (paired comparison #10, CUDA kernel attribution #9; docs/trace-format.md,
// "Paired traces" and "Kernel"). Version 3 is version 2 plus optional fields, so parse-v2 reads the
// body and calls these for the new fields; every one is optional and absent in v1/v2 files.
import { Checker, type Json, type Obj } from './checked';
import type {
  ActScales, CuptiMeta, ErrorMetrics, Histogram, Logits, NodeCmp, NodeRecord, Outlier, PairedMeta, RefOutput,
  SampledDist, SamplerSettings, Stats, Step, StepCompare, TraceMeta, ValueGrid,
} from './types';

// The readers of v2 parts this file reuses (passed in so the two files do not import each other).
export interface V2Readers {
  stats(c: Checker, s: Obj, path: string): Stats;
  grid(c: Checker, g: Obj, path: string): ValueGrid;
  hist(c: Checker, h: Obj, path: string): Histogram;
  logits(c: Checker, l: Obj, path: string): Logits;
}

type MetaV3 = Pick<TraceMeta, 'sampler' | 'compare' | 'tokensFrom' | 'summaries' | 'cupti' | 'deviceLimits'>;

export function parseMetaV3(c: Checker, m: Obj): MetaV3 {
  return {
    sampler: m.sampler ? parseSampler(c, c.obj(m.sampler, 'meta.sampler')) : null,
    compare: m.compare ? parsePairedMeta(c, c.obj(m.compare, 'meta.compare')) : null,
    tokensFrom: m.tokens_from ? (() => {
      const t = c.obj(m.tokens_from, 'meta.tokens_from');
      return { file: c.optStr(t.file, 'meta.tokens_from.file') ?? '', steps: c.optNum(t.steps, 'meta.tokens_from.steps') };
    })() : null,
    summaries: c.optStr(m.summaries, 'meta.summaries'),
    cupti: m.cupti ? parseCupti(c, c.obj(m.cupti, 'meta.cupti')) : null,
    deviceLimits: m.device_limits ? { readGbs: c.num(c.obj(m.device_limits, 'meta.device_limits').read_gbs, 'meta.device_limits.read_gbs') } : null,
  };
}

function parseSampler(c: Checker, s: Obj): SamplerSettings {
  const n = (k: string) => c.optNum(s[k], `meta.sampler.${k}`);
  return { temperature: n('temperature'), topK: n('top_k'), topP: n('top_p'), repeatPenalty: n('repeat_penalty'), seed: n('seed'), nPredict: n('n_predict') };
}

function parsePairedMeta(c: Checker, o: Obj): PairedMeta {
  let tolerance: PairedMeta['tolerance'] = null;
  if (o.tolerance) {
    const t = c.obj(o.tolerance, 'meta.compare.tolerance');
    tolerance = { abs: c.num(t.abs, 'meta.compare.tolerance.abs'), rel: c.num(t.rel, 'meta.compare.tolerance.rel') };
  }
  return {
    path: c.str(o.path, 'meta.compare.path'),
    backend: c.optStr(o.backend, 'meta.compare.backend') ?? '',
    mode: c.optStr(o.mode, 'meta.compare.mode') ?? 'lockstep',
    teacher: c.optStr(o.teacher, 'meta.compare.teacher') ?? 'a',
    tolerance,
    local: o.local === true,
  };
}

function parseCupti(c: Checker, o: Obj): CuptiMeta {
  return {
    enabled: o.enabled === true, reason: c.optStr(o.reason, 'meta.cupti.reason'),
    steps: c.optStr(o.steps, 'meta.cupti.steps'), otherSteps: c.optStr(o.other_steps, 'meta.cupti.other_steps'),
  };
}

// True when the raw record carries any v3 field (the common v2 record skips the checked path).
export function hasV3RecordFields(r: Obj): boolean {
  return r.cmp !== undefined || r.ref !== undefined || r.outliers !== undefined || r.act_scales !== undefined ||
    r.gpu_us !== undefined || r.gpu_start_us !== undefined;
}

export function addRecordV3(c: Checker, r: Obj, path: string, rec: NodeRecord, v2: V2Readers): void {
  if (r.cmp != null) rec.cmp = parseNodeCmp(c, c.obj(r.cmp, `${path}.cmp`), `${path}.cmp`);
  if (r.ref != null) rec.ref = parseRef(c, c.obj(r.ref, `${path}.ref`), `${path}.ref`, v2);
  if (r.outliers != null) rec.outliers = c.arr(r.outliers, `${path}.outliers`).map((o, i) => parseOutlier(c, c.obj(o, `${path}.outliers[${i}]`), `${path}.outliers[${i}]`));
  if (r.act_scales != null) rec.actScales = parseActScales(c, c.obj(r.act_scales, `${path}.act_scales`), `${path}.act_scales`);
  if (r.gpu_us !== undefined) rec.gpuUs = c.optNum(r.gpu_us, `${path}.gpu_us`);
  if (r.gpu_start_us !== undefined) rec.gpuStartUs = c.optNum(r.gpu_start_us, `${path}.gpu_start_us`);
}

function parseErrorMetrics(c: Checker, o: Obj, p: string): ErrorMetrics {
  return {
    sqnrDb: c.optNum(o.sqnr_db, `${p}.sqnr_db`), cosine: c.optNum(o.cosine, `${p}.cosine`),
    relL2: c.optNum(o.rel_l2, `${p}.rel_l2`), maxAbsDiff: c.optNum(o.max_abs_diff, `${p}.max_abs_diff`),
  };
}

function parseNodeCmp(c: Checker, o: Obj, p: string): NodeCmp {
  let at: [number, number] | null = null;
  if (o.max_abs_at != null) {
    const a = c.arr(o.max_abs_at, `${p}.max_abs_at`);
    if (a.length !== 2) c.fail(`${p}.max_abs_at`, `expected [row, col], got ${a.length} numbers`);
    at = [c.int(a[0], `${p}.max_abs_at[0]`), c.int(a[1], `${p}.max_abs_at[1]`)];
  }
  return {
    ...parseErrorMetrics(c, o, p),
    maxAbsAt: at,
    nBeyond: c.optNum(o.n_beyond, `${p}.n_beyond`),
    local: o.local ? parseErrorMetrics(c, c.obj(o.local, `${p}.local`), `${p}.local`) : null,
  };
}

function parseRef(c: Checker, o: Obj, p: string, v2: V2Readers): RefOutput {
  return {
    stats: o.stats ? v2.stats(c, c.obj(o.stats, `${p}.stats`), `${p}.stats`) : null,
    grid: o.grid ? v2.grid(c, c.obj(o.grid, `${p}.grid`), `${p}.grid`) : null,
    hist: o.hist ? v2.hist(c, c.obj(o.hist, `${p}.hist`), `${p}.hist`) : null,
  };
}

function parseOutlier(c: Checker, o: Obj, p: string): Outlier {
  return {
    row: c.int(o.row, `${p}.row`), col: c.int(o.col, `${p}.col`), value: c.numOrNaN(o.value, `${p}.value`),
    refValue: o.ref_value === undefined ? null : c.numOrNaN(o.ref_value, `${p}.ref_value`),
  };
}

function parseActScales(c: Checker, o: Obj, p: string): ActScales {
  return {
    min: c.num(o.min, `${p}.min`), max: c.num(o.max, `${p}.max`), mean: c.num(o.mean, `${p}.mean`),
    blocks: c.int(o.blocks, `${p}.blocks`), blockSize: c.optNum(o.block_size, `${p}.block_size`) ?? 32,
  };
}

type StepV3 = Pick<Step, 'refLogits' | 'compare' | 'gpuMs' | 'gpuBusyMs' | 'idleMs' | 'eventMs' | 'hostMs' | 'kernelsDropped' | 'kernelsNote'>;

export function parseStepV3(c: Checker, s: Obj, p: string, v2: V2Readers): StepV3 {
  const out: StepV3 = {};
  if (s.ref_logits) out.refLogits = v2.logits(c, c.obj(s.ref_logits, `${p}.ref_logits`), `${p}.ref_logits`);
  if (s.compare) out.compare = parseStepCompare(c, c.obj(s.compare, `${p}.compare`), `${p}.compare`);
  for (const [k, key] of [['gpuMs', 'gpu_ms'], ['gpuBusyMs', 'gpu_busy_ms'], ['idleMs', 'idle_ms'], ['eventMs', 'event_ms'], ['hostMs', 'host_ms'], ['kernelsDropped', 'kernels_dropped']] as const)
    if (s[key] !== undefined) out[k] = c.optNum(s[key], `${p}.${key}`);
  if (s.kernels_note !== undefined) out.kernelsNote = c.optStr(s.kernels_note, `${p}.kernels_note`);
  return out;
}

function parseStepCompare(c: Checker, o: Obj, p: string): StepCompare {
  const id = (v: Json, q: string) => { const n = c.optNum(v, q); return n === null || n < 0 ? null : n; };
  return {
    kl: c.optNum(o.kl, `${p}.kl`), marginA: c.optNum(o.margin_a, `${p}.margin_a`), marginB: c.optNum(o.margin_b, `${p}.margin_b`),
    top1A: id(o.top1_a, `${p}.top1_a`), top1B: id(o.top1_b, `${p}.top1_b`), chosenDiffers: o.chosen_differs === true,
  };
}

export function parseSampled(c: Checker, o: Obj, p: string): SampledDist {
  return {
    temperature: c.optNum(o.temperature, `${p}.temperature`), repeatPenalty: c.optNum(o.repeat_penalty, `${p}.repeat_penalty`),
    top: c.arr(o.top ?? [], `${p}.top`).map((t, i) => {
      const e = c.obj(t, `${p}.top[${i}]`);
      return { id: c.int(e.id, `${p}.top[${i}].id`), p: c.num(e.p, `${p}.top[${i}].p`) };
    }),
    chosenP: c.optNum(o.chosen_p, `${p}.chosen_p`),
  };
}

// v3 kernel fields: node -1 with a reason, and the CUDA graph node id.
export function kernelV3(c: Checker, k: Obj, p: string): { unattributed?: string | null; graphNode?: number | null; covers?: number[] } {
  const out: { unattributed?: string | null; graphNode?: number | null; covers?: number[] } = {};
  if (k.covers !== undefined) out.covers = c.arr(k.covers, `${p}.covers`).map((x, i) => c.int(x, `${p}.covers[${i}]`));
  if (k.unattributed !== undefined) out.unattributed = c.optStr(k.unattributed, `${p}.unattributed`);
  if (k.graph_node !== undefined) out.graphNode = c.optNum(k.graph_node, `${p}.graph_node`);
  return out;
}
