// Upstream minfer-trace version 1 (written by the original Rust minfer) → the internal model.
// Layout (docs/trace-format.md, "Version 1"):
//   {format, version: 1, model, prompt, phases[] → {kind, graph: {nodes[]}, steps[]}}
//   graph node: {id, name, op, shape (ggml order, fastest first), dtype, src[], backend?,
//                meta: {layer?, weight?, bias?, wtype?, …}, detail?: {layer?, …}}
//                e.g. name "matmul_blk.0.attn_q.weight"; names repeat across layers ("rms_norm"),
//                the layer is found as upstream's page finds it (v1-layers.ts)
//   step: {token (this step's INPUT token; null in prefill), text, logits_top: [[id, p], …],
//          nodes[] → {id, stats{min,max,mean,absmean}, values[], stride, n}}
// So the token a step produced is the next step's input; the last step's is unknown. Top-k
// entries carry no text: the page fills it from the model's vocabulary when the server has the
// GGUF, else shows "#id".
import { Checker, type Json, type Obj } from './checked';
import { makeGraph } from './graph-index';
import { upstreamLayers } from './v1-layers';
import type { GraphNode, Histogram, NodeRecord, Step, Trace, TraceGraph, TopToken, ValueGrid } from './types';

const HIST_BINS = 32;

export function parseV1(c: Checker, root: Obj, name: string): Trace {
  const phases = c.arr(root.phases, 'phases');
  if (phases.length === 0) c.fail('phases', 'no phases in the trace');
  const graphs = new Map<string, TraceGraph>();
  const steps: Step[] = [];
  const inputs: ({ id: number; text: string } | null)[] = [];   // per step: its input token
  const backends = new Set<string>();
  phases.forEach((p, pi) => {
    const path = `phases[${pi}]`;
    const ph = c.obj(p, path);
    const kind = c.str(ph.kind, `${path}.kind`);
    const gid = graphs.has(kind) ? `${kind}#${pi}` : kind;
    const gobj = c.obj(ph.graph, `${path}.graph`);
    const raw = c.arr(gobj.nodes, `${path}.graph.nodes`).map((n, i) => c.obj(n, `${path}.graph.nodes[${i}]`));
    const nTokens = tokenCount(c, raw, `${path}.graph.nodes`);
    for (const n of raw) if (typeof n.backend === 'string' && n.backend) backends.add(n.backend);
    const nodes = raw.map((n, i) => parseNode(c, n, `${path}.graph.nodes[${i}]`, i, nTokens));
    const layers = upstreamLayers(raw, nodes.map((n) => n.src));
    nodes.forEach((n, i) => { n.layer = layers[i]; });
    const graph = makeGraph(gid, kind, nTokens, false, nodes);
    graphs.set(gid, graph);
    c.arr(ph.steps, `${path}.steps`).forEach((s, si) => {
      const spath = `${path}.steps[${si}]`;
      const so = c.obj(s, spath);
      const token = so.token === undefined || so.token === null ? null : c.int(so.token, `${spath}.token`);
      const text = c.optStr(so.text, `${spath}.text`);
      const records = new Map<number, NodeRecord>();
      c.arr(so.nodes ?? [], `${spath}.nodes`).forEach((r, ri) => {
        const rec = parseRecord(c, c.obj(r, `${spath}.nodes[${ri}]`), `${spath}.nodes[${ri}]`, graph);
        records.set(rec.id, rec);
      });
      const top = c.arr(so.logits_top ?? [], `${spath}.logits_top`).map((t, ti) => topEntry(c, t, `${spath}.logits_top[${ti}]`));
      inputs.push(token === null ? null : { id: token, text: text ?? `#${token}` });
      steps.push({
        index: steps.length, phase: kind, graphId: gid, pos: 0,
        tokens: token === null ? [] : [{ id: token, text: text ?? `#${token}` }],
        timeMs: c.optNum(so.time_ms, `${spath}.time_ms`),
        records, nodesSkipped: false,
        logits: top.length ? { top, entropy: null, chosen: null, chosenText: null, chosenRank: null, chosenP: null } : null,
        kernels: [],
      });
    });
  });
  // The token step k produced is the input of step k+1 (same run, next position).
  steps.forEach((s, k) => {
    const next = inputs[k + 1];
    if (!s.logits || !next) return;
    const rank = s.logits.top.findIndex((t) => t.id === next.id);
    s.logits.chosen = next.id;
    s.logits.chosenText = next.text;
    s.logits.chosenRank = rank >= 0 ? rank : null;
    s.logits.chosenP = rank >= 0 ? s.logits.top[rank].p : null;
    if (rank >= 0 && s.logits.top[rank].text.startsWith('#')) s.logits.top[rank].text = next.text;
  });
  // Positions: the prefill covers the prompt, each decode step one more position.
  let pos = 0;
  for (const s of steps) { s.pos = pos; pos += Math.max(1, graphs.get(s.graphId)!.nTokens); }
  const model = typeof root.model === 'string' ? root.model : '';
  const warnings = ['Version 1 trace (upstream minfer): no std/NaN/Inf counts, entropy, timings or kernels; histograms are computed here from the sampled values.'];
  const modelName = model.split('/').pop() || 'MODEL.gguf';
  if (steps.some((s) => s.logits && s.logits.top.some((t) => t.text.startsWith('#'))))
    warnings.push(`Top-k tokens are shown as #id where the trace has no text and the server has no vocabulary for this model (start minfer-viz with --model ${modelName} to show their text).`);
  return {
    name, version: 1, complete: true,
    meta: {
      modelFile: model, modelName: model.replace(/\.gguf$/i, '').split('/').pop() ?? '', architecture: '',
      hparams: {}, weightTypes: weightTypes(graphs), backend: typeof root.backend === 'string' ? root.backend : [...backends].join(' + '), device: '',
      matmulPath: '', cudaGraph: null, prompt: typeof root.prompt === 'string' ? root.prompt : '', recordedAt: '', raw: {},
    },
    graphs, steps, timings: null, warnings,
  };
}

// The phase's token count: the element count of its token-id input, one id per token (upstream
// writes the shape [1, n_tokens]; ggml order [n_tokens, 1, 1, 1] reads the same).
function tokenCount(c: Checker, nodes: Obj[], path: string): number {
  const inputs = nodes.filter((n) => n.op === 'input');
  const inp = inputs.find((n) => n.name === 'token_ids') ?? inputs.find((n) => n.dtype === 'i32' || /token/.test(String(n.name ?? '')));
  if (!inp || !Array.isArray(inp.shape) || inp.shape.length === 0) return 0;
  const at = `${path}[${nodes.indexOf(inp)}].shape`;
  return inp.shape.reduce<number>((count, d, k) => count * c.int(d, `${at}[${k}]`), 1);
}

// ggml order (fastest dimension first, trailing 1s) → token-major [tokens, features].
export function ggmlToRowsCols(ne: number[], nTokens: number): number[] {
  const dims = [...ne];
  while (dims.length > 1 && dims[dims.length - 1] === 1) dims.pop();
  const total = dims.reduce((a, b) => a * b, 1);
  if (dims.length === 0) return [1, 1];
  if (nTokens === 1) return [1, total];
  const outer = dims[dims.length - 1];
  if (dims.length > 1 && (nTokens <= 0 || outer === nTokens)) return [outer, total / outer];
  if (dims.length === 1) return nTokens > 0 && dims[0] === nTokens ? [nTokens, 1] : [1, dims[0]];
  return [total / dims[0], dims[0]];
}

function parseNode(c: Checker, n: Obj, path: string, index: number, nTokens: number): GraphNode {
  const id = n.id === undefined ? index : c.int(n.id, `${path}.id`);
  if (id !== index) c.fail(`${path}.id`, `node id ${id} is not its index ${index}`);
  const name = c.optStr(n.name, `${path}.name`) ?? `node${id}`;
  const meta = n.meta === undefined || n.meta === null ? {} : c.obj(n.meta, `${path}.meta`);
  const src = n.src ?? n.inputs ?? [];
  const ne = c.arr(n.shape ?? [], `${path}.shape`).map((x, k) => c.int(x, `${path}.shape[${k}]`));
  return {
    id, name, op: c.optStr(n.op, `${path}.op`) ?? '?',
    shape: ggmlToRowsCols(ne, nTokens),
    dtype: c.optStr(n.dtype, `${path}.dtype`) ?? 'f32',
    src: c.arr(src, `${path}.src`).map((x, k) => c.int(x, `${path}.src[${k}]`)).filter((s) => s >= 0 && s < id),
    layer: -1,   // set from the whole graph (v1-layers.ts)
    weight: optStrIn(c, meta.weight, `${path}.meta.weight`) ?? c.optStr(n.weight, `${path}.weight`),
    weightType: optStrIn(c, meta.wtype, `${path}.meta.wtype`) ?? c.optStr(n.weight_type, `${path}.weight_type`),
    bias: optStrIn(c, meta.bias, `${path}.meta.bias`),
    fusedFrom: [], fusedInto: -1, hasOutput: true,
  };
}

function optStrIn(c: Checker, v: Json, path: string): string | null {
  const s = c.optStr(v, path);
  return s ? s : null;
}

// [token_id, prob] (upstream), or {id, p, text?} (tolerated).
function topEntry(c: Checker, t: Json, path: string): TopToken {
  if (Array.isArray(t)) {
    if (t.length < 2) c.fail(path, `expected [token_id, prob], got an array of ${t.length}`);
    const id = c.int(t[0], `${path}[0]`);
    return { id, text: `#${id}`, p: c.num(t[1], `${path}[1]`), logit: null };
  }
  const o = c.obj(t, path);
  const id = c.int(o.id, `${path}.id`);
  return { id, text: c.optStr(o.text, `${path}.text`) ?? `#${id}`, p: c.num(o.p, `${path}.p`), logit: c.optNum(o.logit, `${path}.logit`) };
}

function parseRecord(c: Checker, r: Obj, path: string, graph: TraceGraph): NodeRecord {
  const id = c.int(r.id, `${path}.id`);
  const node = graph.nodes[id];
  if (!node) c.fail(`${path}.id`, `node ${id} is not in the phase's graph (${graph.nodes.length} nodes)`);
  const s = c.obj(r.stats, `${path}.stats`);
  const stats = {
    min: c.numOrNaN(s.min, `${path}.stats.min`), max: c.numOrNaN(s.max, `${path}.stats.max`),
    mean: c.numOrNaN(s.mean, `${path}.stats.mean`), absmean: c.numOrNaN(s.absmean, `${path}.stats.absmean`),
    std: null, count: null, nan: 0, inf: 0,
  };
  let grid: ValueGrid | null = null;
  if (r.values !== undefined && r.values !== null) {
    const values = c.values(r.values, `${path}.values`);
    const stride = Math.max(1, c.optNum(r.stride, `${path}.stride`) ?? 1);
    const n = c.optNum(r.n, `${path}.n`) ?? values.length * stride;
    grid = shapeGrid(values, stride, n, node.shape);
    let nan = 0;
    for (const v of values) if (Number.isNaN(v)) nan++;
    stats.nan = nan;
  }
  return { id, timeUs: c.optNum(r.time_us, `${path}.time_us`), startUs: null, stats, grid, hist: grid ? histogramOf(grid.values, stats.min, stats.max) : null, noOutput: null };
}

// Samples every `stride`-th element of the flattened tensor. When the stride divides the row
// width the samples form an exact 2-D grid; otherwise they stay one flattened row.
function shapeGrid(values: Float32Array, stride: number, n: number, shape: number[]): ValueGrid {
  const cols = shape.length >= 2 ? shape[1] : 0;
  if (cols > 0 && cols % stride === 0 && values.length % (cols / stride) === 0 && cols / stride > 1) {
    const gc = cols / stride;
    return { rows: values.length / gc, cols: gc, rowStride: 1, colStride: stride, shape: [Math.max(1, Math.round(n / cols)), cols], values, flattened: false };
  }
  return { rows: 1, cols: values.length, rowStride: 1, colStride: stride, shape: [1, n], values, flattened: true };
}

function weightTypes(graphs: Map<string, TraceGraph>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of graphs.values())
    for (const n of g.nodes)
      if (n.weight && n.weightType) {
        const cls = n.weight.replace(/^.*blk\.\d+\./, '').replace(/\.weight$/, '');
        out[cls] = n.weightType;
      }
  return out;
}

export function histogramOf(values: Float32Array, lo: number, hi: number): Histogram {
  const counts = new Array<number>(HIST_BINS).fill(0);
  const width = hi > lo ? (hi - lo) / HIST_BINS : 1;
  let under = 0, over = 0;
  for (const v of values) {
    if (Number.isNaN(v)) continue;
    if (v === -Infinity) { under++; continue; }
    if (v === Infinity) { over++; continue; }
    counts[Math.min(HIST_BINS - 1, Math.max(0, Math.floor((v - lo) / width)))]++;
  }
  return { lo, hi, counts, underflow: under, overflow: over, derived: true };
}

// Ids whose text the file does not carry (shown as "#id").
export function idsWithoutText(t: Trace): number[] {
  const ids = new Set<number>();
  for (const s of t.steps) for (const x of s.logits?.top ?? []) if (x.text === `#${x.id}`) ids.add(x.id);
  return [...ids].sort((a, b) => a - b);
}

// Fills texts from the model's vocabulary; drops the "#id" warning when none is left.
export function applyVocabulary(t: Trace, texts: Map<number, string>): void {
  for (const s of t.steps)
    for (const x of s.logits?.top ?? []) {
      const v = texts.get(x.id);
      if (v !== undefined && x.text === `#${x.id}`) x.text = v;
    }
  if (idsWithoutText(t).length === 0) t.warnings = t.warnings.filter((w) => !/shown as #id/.test(w));
}
