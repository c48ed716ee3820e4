// minfer-trace version 2 (docs/trace-format.md) → the internal model. Version 3 is version 2
// plus optional fields: the same reader, with parse-v3.ts for the additions.
import { Checker, type Json, type Obj } from './checked';
import { makeGraph, layerFromName } from './graph-index';
import { addRecordV3, hasV3RecordFields, kernelV3, parseMetaV3, parseSampled, parseStepV3, type V2Readers } from './parse-v3';
import type {
  GraphNode, Histogram, Kernel, Logits, NodeRecord, Stats, Step, Trace, TraceGraph, TraceMeta, ValueGrid,
} from './types';

export function parseV2(c: Checker, root: Obj, name: string, version: 2 | 3 = 2): Trace {
  const meta = parseMeta(c, c.obj(root.meta, 'meta'));
  const graphs = new Map<string, TraceGraph>();
  c.arr(root.graphs, 'graphs').forEach((g, i) => {
    const graph = parseGraph(c, c.obj(g, `graphs[${i}]`), `graphs[${i}]`);
    if (graphs.has(graph.id)) c.fail(`graphs[${i}].id`, `duplicate graph id "${graph.id}"`);
    graphs.set(graph.id, graph);
  });
  if (graphs.size === 0) c.fail('graphs', 'no graphs in the trace');
  const steps = c.arr(root.steps, 'steps').map((s, i) => parseStep(c, c.obj(s, `steps[${i}]`), `steps[${i}]`, graphs));
  const complete = root.complete === true;
  const warnings: string[] = [];
  if (!complete) warnings.push(`The trace is incomplete ("complete": false): the run stopped or crashed after ${steps.length} step(s).`);
  const timings = root.timings && typeof root.timings === 'object' ? (root.timings as Record<string, unknown>) : null;
  return { name, version, complete, meta, graphs, steps, timings, warnings };
}

export function parseMeta(c: Checker, m: Obj): TraceMeta {
  const model = c.obj(m.model ?? {}, 'meta.model');
  const wt: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.obj(model.weight_types ?? {}, 'meta.model.weight_types')))
    wt[k] = c.str(v, `meta.model.weight_types.${k}`);
  return {
    modelFile: c.optStr(model.file, 'meta.model.file') ?? '',
    modelName: c.optStr(model.name, 'meta.model.name') ?? '',
    architecture: c.optStr(model.architecture, 'meta.model.architecture') ?? '',
    hparams: c.obj(model.hparams ?? {}, 'meta.model.hparams'),
    weightTypes: wt,
    backend: c.optStr(m.backend, 'meta.backend') ?? '',
    device: c.optStr(m.device, 'meta.device') ?? '',
    matmulPath: c.optStr(m.matmul_path, 'meta.matmul_path') ?? '',
    cudaGraph: typeof m.cuda_graph === 'boolean' ? m.cuda_graph : null,
    prompt: c.optStr(m.prompt, 'meta.prompt') ?? '',
    recordedAt: c.optStr(m.recorded_at, 'meta.recorded_at') ?? '',
    raw: m,
    ...parseMetaV3(c, m),
  };
}

export function parseGraph(c: Checker, g: Obj, path: string): TraceGraph {
  const id = c.str(g.id, `${path}.id`);
  const nodes = c.arr(g.nodes, `${path}.nodes`).map((n, i) => parseNode(c, c.obj(n, `${path}.nodes[${i}]`), `${path}.nodes[${i}]`, i));
  for (const n of nodes)
    n.src.forEach((s, k) => {
      if (s < 0 || s >= nodes.length) c.fail(`${path}.nodes[${n.id}].src[${k}]`, `node ${s} does not exist (graph has ${nodes.length} nodes)`);
    });
  return makeGraph(id, c.optStr(g.phase, `${path}.phase`) ?? id, c.optNum(g.n_tokens, `${path}.n_tokens`) ?? 0, g.fused === true, nodes);
}

function parseNode(c: Checker, n: Obj, path: string, index: number): GraphNode {
  const id = c.int(n.id, `${path}.id`);
  if (id !== index) c.fail(`${path}.id`, `node id ${id} is not its index ${index}`);
  const name = c.str(n.name, `${path}.name`);
  return {
    id, name,
    op: c.str(n.op, `${path}.op`),
    shape: c.arr(n.shape ?? [], `${path}.shape`).map((x, k) => c.int(x, `${path}.shape[${k}]`)),
    dtype: c.optStr(n.dtype, `${path}.dtype`) ?? 'f32',
    src: c.arr(n.src ?? [], `${path}.src`).map((x, k) => c.int(x, `${path}.src[${k}]`)),
    layer: n.layer === undefined ? layerFromName(name) : c.int(n.layer, `${path}.layer`),
    weight: c.optStr(n.weight, `${path}.weight`) || null,
    weightType: c.optStr(n.weight_type, `${path}.weight_type`) || null,
    bias: c.optStr(n.bias, `${path}.bias`) || null,
    fusedFrom: c.arr(n.fused_from ?? [], `${path}.fused_from`).map((x, k) => c.str(x, `${path}.fused_from[${k}]`)),
    fusedInto: n.fused_into === undefined ? -1 : c.int(n.fused_into, `${path}.fused_into`),
    hasOutput: n.has_output !== false,
  };
}

function parseStep(c: Checker, s: Obj, path: string, graphs: Map<string, TraceGraph>): Step {
  const graphId = c.str(s.graph, `${path}.graph`);
  const graph = graphs.get(graphId);
  if (!graph) c.fail(`${path}.graph`, `no graph with id "${graphId}" (have: ${[...graphs.keys()].join(', ')})`);
  // A sliced index (/api/slices/NAME/index) has nodes: null; the step's slice fills it later.
  const pending = s.nodes === null;
  const records = pending ? new Map<number, NodeRecord>() : parseRecords(c, s.nodes ?? [], `${path}.nodes`, graph);
  return {
    pending,
    index: c.int(s.index, `${path}.index`),
    phase: c.optStr(s.phase, `${path}.phase`) ?? graph.phase,
    graphId,
    pos: c.optNum(s.pos, `${path}.pos`) ?? 0,
    tokens: c.arr(s.tokens ?? [], `${path}.tokens`).map((t, i) => {
      const o = c.obj(t, `${path}.tokens[${i}]`);
      return { id: c.int(o.id, `${path}.tokens[${i}].id`), text: c.optStr(o.text, `${path}.tokens[${i}].text`) ?? '' };
    }),
    timeMs: c.optNum(s.time_ms, `${path}.time_ms`),
    records,
    nodesSkipped: s.nodes_skipped === true,
    logits: s.logits ? parseLogits(c, c.obj(s.logits, `${path}.logits`), `${path}.logits`) : null,
    kernels: parseKernels(c, s.kernels ?? [], `${path}.kernels`),
    ...parseStepV3(c, s, path, V2),
  };
}

// One NodeRecord (docs/trace-format.md): a step's records, a step's slice and a live run's node
// events (live-trace.ts) all go through it.
export function parseNodeRecord(c: Checker, r: Json, path: string): NodeRecord {
  const fast = r !== null && typeof r === 'object' && !Array.isArray(r) ? fastRecord(r as Obj) : null;
  const rec = fast ?? parseRecord(c, c.obj(r, path), path);
  if (hasV3RecordFields(r as Obj)) addRecordV3(c, r as Obj, path, rec, V2);
  return rec;
}

function parseRecords(c: Checker, nodes: unknown, path: string, graph: TraceGraph): Map<number, NodeRecord> {
  const records = new Map<number, NodeRecord>();
  c.arr(nodes, path).forEach((r, i) => {
    const rec = parseNodeRecord(c, r, `${path}[${i}]`);
    if (rec.id < 0 || rec.id >= graph.nodes.length)
      c.fail(`${path}[${i}].id`, `node ${rec.id} is not in graph "${graph.id}" (${graph.nodes.length} nodes)`);
    records.set(rec.id, rec);
  });
  return records;
}

function parseKernels(c: Checker, ks: unknown, path: string): Kernel[] {
  return c.arr(ks, path).map((k, i) => parseKernel(c, c.obj(k, `${path}[${i}]`), `${path}[${i}]`));
}

// Fills a pending step from its slice {"step": K, "nodes": […], "kernels": […]}.
export function fillStepSlice(trace: Trace, json: unknown, source: string): number {
  const c = new Checker(source);
  const o = c.obj(json, '(slice)');
  const k = c.int(o.step, 'step');
  const step = trace.steps[k];
  if (!step) c.fail('step', `step ${k} is not in the trace (${trace.steps.length} steps)`);
  const graph = trace.graphs.get(step.graphId)!;
  step.records = parseRecords(c, o.nodes ?? [], `steps[${k}].nodes`, graph);
  step.kernels = parseKernels(c, o.kernels ?? [], `steps[${k}].kernels`);
  step.pending = false;
  return k;
}

// The bulk of a trace is node records: read well-formed ones without building JSON paths, and
// fall back to the checked reader (which names the bad field) on anything unexpected.
const numNull = (v: unknown) => typeof v === 'number' || v === null;
const optNum = (v: unknown) => v === undefined || v === null || typeof v === 'number';
const nan = (v: unknown) => (v === null ? NaN : (v as number));

function fastRecord(r: Obj): NodeRecord | null {
  if (!Number.isInteger(r.id) || !optNum(r.time_us) || !optNum(r.start_us)) return null;
  const id = r.id as number, timeUs = (r.time_us as number | undefined) ?? null, startUs = (r.start_us as number | undefined) ?? null;
  if (r.no_output !== undefined)
    return typeof r.no_output === 'string' ? { id, timeUs, startUs, stats: null, grid: null, hist: null, noOutput: r.no_output } : null;
  const s = r.stats as Record<string, unknown> | undefined;
  if (!s || typeof s !== 'object' || !numNull(s.min) || !numNull(s.max) || !numNull(s.mean) || !numNull(s.absmean) ||
      !(s.std === undefined || numNull(s.std)) || !optNum(s.count) || !optNum(s.nan) || !optNum(s.inf)) return null;
  const stats: Stats = { min: nan(s.min), max: nan(s.max), mean: nan(s.mean), absmean: nan(s.absmean),
    std: s.std === undefined ? null : nan(s.std), count: (s.count as number | undefined) ?? null,
    nan: (s.nan as number | undefined) ?? 0, inf: (s.inf as number | undefined) ?? 0 };
  let grid: ValueGrid | null = null;
  if (r.grid) {
    const g = r.grid as Record<string, unknown>;
    const vals = g.values;
    if (!Number.isInteger(g.rows) || !Number.isInteger(g.cols) || !Array.isArray(vals) || vals.length !== (g.rows as number) * (g.cols as number) ||
        !optNum(g.row_stride) || !optNum(g.col_stride) || !(g.shape === undefined || Array.isArray(g.shape))) return null;
    const values = new Float32Array(vals.length);
    for (let i = 0; i < vals.length; i++) {
      const x = vals[i];
      if (typeof x === 'number') values[i] = x;
      else if (x === null) values[i] = NaN;
      else return null;
    }
    const shape = (g.shape as unknown[] | undefined) ?? [g.rows, g.cols];
    if (!shape.every((x) => Number.isInteger(x))) return null;
    grid = { rows: g.rows as number, cols: g.cols as number, rowStride: (g.row_stride as number | undefined) ?? 1,
             colStride: (g.col_stride as number | undefined) ?? 1, shape: shape as number[], values, flattened: false };
  }
  let hist: Histogram | null = null;
  if (r.hist) {
    const h = r.hist as Record<string, unknown>;
    if (!numNull(h.lo) || !numNull(h.hi) || !Array.isArray(h.counts) || !optNum(h.underflow) || !optNum(h.overflow)) return null;
    for (const x of h.counts) if (typeof x !== 'number') return null;
    hist = { lo: nan(h.lo), hi: nan(h.hi), counts: h.counts as number[], underflow: (h.underflow as number | undefined) ?? 0,
             overflow: (h.overflow as number | undefined) ?? 0, derived: false };
  }
  return { id, timeUs, startUs, stats, grid, hist, noOutput: null };
}

function parseRecord(c: Checker, r: Obj, path: string): NodeRecord {
  const fast = fastRecord(r);
  if (fast) return fast;
  return checkedRecord(c, r, path);
}

function checkedRecord(c: Checker, r: Obj, path: string): NodeRecord {
  const id = c.int(r.id, `${path}.id`);
  const timeUs = c.optNum(r.time_us, `${path}.time_us`);
  const startUs = c.optNum(r.start_us, `${path}.start_us`);
  if (r.no_output !== undefined)
    return { id, timeUs, startUs, stats: null, grid: null, hist: null, noOutput: c.str(r.no_output, `${path}.no_output`) };
  return {
    id, timeUs, startUs,
    stats: parseStats(c, c.obj(r.stats, `${path}.stats`), `${path}.stats`),
    grid: r.grid ? parseGrid(c, c.obj(r.grid, `${path}.grid`), `${path}.grid`) : null,
    hist: r.hist ? parseHist(c, c.obj(r.hist, `${path}.hist`), `${path}.hist`) : null,
    noOutput: null,
  };
}

export function parseStats(c: Checker, s: Obj, path: string): Stats {
  return {
    min: c.numOrNaN(s.min, `${path}.min`), max: c.numOrNaN(s.max, `${path}.max`),
    mean: c.numOrNaN(s.mean, `${path}.mean`), absmean: c.numOrNaN(s.absmean, `${path}.absmean`),
    std: s.std === undefined ? null : c.numOrNaN(s.std, `${path}.std`), count: c.optNum(s.count, `${path}.count`),
    nan: c.optNum(s.nan, `${path}.nan`) ?? 0, inf: c.optNum(s.inf, `${path}.inf`) ?? 0,
  };
}

function parseGrid(c: Checker, g: Obj, path: string): ValueGrid {
  const rows = c.int(g.rows, `${path}.rows`), cols = c.int(g.cols, `${path}.cols`);
  return {
    rows, cols,
    rowStride: c.optNum(g.row_stride, `${path}.row_stride`) ?? 1,
    colStride: c.optNum(g.col_stride, `${path}.col_stride`) ?? 1,
    shape: c.arr(g.shape ?? [rows, cols], `${path}.shape`).map((x, k) => c.int(x, `${path}.shape[${k}]`)),
    values: c.values(g.values, `${path}.values`, rows * cols),
    flattened: false,
  };
}

function parseHist(c: Checker, h: Obj, path: string): Histogram {
  return {
    lo: c.numOrNaN(h.lo, `${path}.lo`), hi: c.numOrNaN(h.hi, `${path}.hi`),
    counts: c.arr(h.counts, `${path}.counts`).map((x, k) => c.num(x, `${path}.counts[${k}]`)),
    underflow: c.optNum(h.underflow, `${path}.underflow`) ?? 0,
    overflow: c.optNum(h.overflow, `${path}.overflow`) ?? 0,
    derived: false,
  };
}

export function parseLogits(c: Checker, l: Obj, path: string): Logits {
  return {
    top: c.arr(l.top ?? [], `${path}.top`).map((t: Json, i) => {
      const o = c.obj(t, `${path}.top[${i}]`);
      return {
        id: c.int(o.id, `${path}.top[${i}].id`), text: c.optStr(o.text, `${path}.top[${i}].text`) ?? '',
        p: c.num(o.p, `${path}.top[${i}].p`), logit: c.optNum(o.logit, `${path}.top[${i}].logit`),
      };
    }),
    entropy: c.optNum(l.entropy, `${path}.entropy`),
    chosen: noneIfNegative(c.optNum(l.chosen, `${path}.chosen`)),
    chosenText: c.optStr(l.chosen_text, `${path}.chosen_text`),
    chosenRank: noneIfNegative(c.optNum(l.chosen_rank, `${path}.chosen_rank`)),
    chosenP: c.optNum(l.chosen_p, `${path}.chosen_p`),
    ...(l.sampled ? { sampled: parseSampled(c, c.obj(l.sampled, `${path}.sampled`), `${path}.sampled`) } : {}),
  };
}

function parseKernel(c: Checker, k: Obj, path: string): Kernel {
  const dims = (v: Json, p: string) => c.arr(v ?? [], p).map((x, i) => c.int(x, `${p}[${i}]`));
  return {
    name: c.str(k.name, `${path}.name`), node: c.int(k.node, `${path}.node`),
    startNs: c.num(k.start_ns, `${path}.start_ns`), durationNs: c.num(k.duration_ns, `${path}.duration_ns`),
    grid: dims(k.grid, `${path}.grid`), block: dims(k.block, `${path}.block`),
    registers: c.optNum(k.registers, `${path}.registers`), sharedBytes: c.optNum(k.shared_bytes, `${path}.shared_bytes`),
    ...kernelV3(c, k, path),
  };
}

const V2: V2Readers = { stats: parseStats, grid: parseGrid, hist: parseHist, logits: parseLogits };

// The writer uses -1 for "no token chosen" / "not in the top-k".
function noneIfNegative(v: number | null): number | null {
  return v === null || v < 0 ? null : v;
}
