// Upstream minfer-trace version 1 → the internal model. Layout:
// phases[] → {kind, graph: {nodes[]}, steps[] → {token, text, logits_top[], nodes[] →
// {id, stats{min,max,mean,absmean}, values[], stride, n}}}.
// v1 has no per-step input list: a step's `token` is the token it produced (the one its
// logits chose), so the input of decode step k is the token of step k-1.
import { Checker, type Obj } from './checked';
import { makeGraph, layerFromName } from './graph-index';
import type { GraphNode, Histogram, NodeRecord, Step, Trace, TraceGraph, ValueGrid } from './types';

const HIST_BINS = 32;

export function parseV1(c: Checker, root: Obj, name: string): Trace {
  const phases = c.arr(root.phases, 'phases');
  if (phases.length === 0) c.fail('phases', 'no phases in the trace');
  const graphs = new Map<string, TraceGraph>();
  const steps: Step[] = [];
  let prevToken: { id: number; text: string } | null = null;
  phases.forEach((p, pi) => {
    const path = `phases[${pi}]`;
    const ph = c.obj(p, path);
    const kind = c.str(ph.kind, `${path}.kind`);
    const gid = graphs.has(kind) ? `${kind}#${pi}` : kind;
    const gobj = c.obj(ph.graph, `${path}.graph`);
    const nodes = c.arr(gobj.nodes, `${path}.graph.nodes`).map((n, i) => parseNode(c, c.obj(n, `${path}.graph.nodes[${i}]`), `${path}.graph.nodes[${i}]`, i));
    const graph = makeGraph(gid, kind, 0, false, nodes);
    graphs.set(gid, graph);
    c.arr(ph.steps, `${path}.steps`).forEach((s, si) => {
      const spath = `${path}.steps[${si}]`;
      const so = c.obj(s, spath);
      const token = so.token === undefined || so.token === null ? null : c.int(so.token, `${spath}.token`);
      const text = c.optStr(so.text, `${spath}.text`) ?? '';
      const records = new Map<number, NodeRecord>();
      c.arr(so.nodes ?? [], `${spath}.nodes`).forEach((r, ri) => {
        const rec = parseRecord(c, c.obj(r, `${spath}.nodes[${ri}]`), `${spath}.nodes[${ri}]`, graph);
        records.set(rec.id, rec);
      });
      const top = c.arr(so.logits_top ?? [], `${spath}.logits_top`).map((t, ti) => {
        const o = c.obj(t, `${spath}.logits_top[${ti}]`);
        return { id: c.int(o.id, `${spath}.logits_top[${ti}].id`), text: c.optStr(o.text, `${spath}.logits_top[${ti}].text`) ?? '',
                 p: c.num(o.p, `${spath}.logits_top[${ti}].p`), logit: c.optNum(o.logit, `${spath}.logits_top[${ti}].logit`) };
      });
      const rank = token === null ? -1 : top.findIndex((t) => t.id === token);
      steps.push({
        index: steps.length, phase: kind, graphId: gid, pos: 0,
        tokens: kind === 'decode' && prevToken ? [prevToken] : [],
        timeMs: c.optNum(so.time_ms, `${spath}.time_ms`),
        records,
        nodesSkipped: false,
        logits: top.length || token !== null ? {
          top, entropy: null, chosen: token, chosenText: token === null ? null : text,
          chosenRank: rank >= 0 ? rank : null, chosenP: rank >= 0 ? top[rank].p : null,
        } : null,
        kernels: [],
      });
      if (token !== null) prevToken = { id: token, text };
    });
  });
  const prompt = typeof root.prompt === 'string' ? root.prompt : '';
  return {
    name, version: 1, complete: true,
    meta: {
      modelFile: typeof root.model === 'string' ? root.model : '', modelName: '', architecture: '',
      hparams: {}, weightTypes: {}, backend: typeof root.backend === 'string' ? root.backend : '', device: '',
      matmulPath: '', cudaGraph: null, prompt, recordedAt: '', raw: {},
    },
    graphs, steps, timings: null,
    warnings: ['Version 1 trace: no std/NaN/Inf counts, entropy, timings or kernels; histograms are computed here from the sampled values.'],
  };
}

function parseNode(c: Checker, n: Obj, path: string, index: number): GraphNode {
  const id = n.id === undefined ? index : c.int(n.id, `${path}.id`);
  if (id !== index) c.fail(`${path}.id`, `node id ${id} is not its index ${index}`);
  const name = c.optStr(n.name, `${path}.name`) ?? `node${id}`;
  const src = n.src ?? n.inputs ?? [];
  return {
    id, name, op: c.optStr(n.op, `${path}.op`) ?? '?',
    shape: c.arr(n.shape ?? [], `${path}.shape`).map((x, k) => c.int(x, `${path}.shape[${k}]`)),
    dtype: c.optStr(n.dtype, `${path}.dtype`) ?? 'f32',
    src: c.arr(src, `${path}.src`).map((x, k) => c.int(x, `${path}.src[${k}]`)).filter((s) => s >= 0 && s < id),
    layer: typeof n.layer === 'number' ? n.layer : layerFromName(name),
    weight: c.optStr(n.weight, `${path}.weight`) || null, weightType: c.optStr(n.weight_type, `${path}.weight_type`) || null,
    bias: null, fusedFrom: [], fusedInto: -1, hasOutput: true,
  };
}

function parseRecord(c: Checker, r: Obj, path: string, graph: TraceGraph): NodeRecord {
  const id = c.int(r.id, `${path}.id`);
  const node = graph.nodes[id];
  if (!node) c.fail(`${path}.id`, `node ${id} is not in the phase's graph (${graph.nodes.length} nodes)`);
  const s = c.obj(r.stats, `${path}.stats`);
  const stats = {
    min: c.num(s.min, `${path}.stats.min`), max: c.num(s.max, `${path}.stats.max`),
    mean: c.num(s.mean, `${path}.stats.mean`), absmean: c.num(s.absmean, `${path}.stats.absmean`),
    std: null, count: null, nan: 0, inf: 0,
  };
  let grid: ValueGrid | null = null;
  if (r.values !== undefined) {
    const values = c.values(r.values, `${path}.values`);
    const stride = c.optNum(r.stride, `${path}.stride`) ?? 1;
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
    return { rows: values.length / gc, cols: gc, rowStride: 1, colStride: stride, shape: [n / cols, cols], values, flattened: false };
  }
  return { rows: 1, cols: values.length, rowStride: 1, colStride: stride, shape: [1, n], values, flattened: true };
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
