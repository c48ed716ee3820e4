// Where the page's model (types.ts) keeps each field of a trace's JSON. The JSON's types
// (trace-json.ts) are generated from the schema, the one spelling of the format; the model is
// normalised (camelCase, nulls for "absent", derived fields) and written by hand. This map ties the
// two: per object of the schema, each of its fields names the model field it is read into, or says
// in parentheses why the page has none. The compiler checks that every field of the generated type
// is named and that every model field named exists (`npm run typecheck:web`); the test
// web/test/schema-types.test.ts checks against the schema itself that every object it defines is
// here with exactly its fields. A field added to the schema therefore fails both until the page
// says what it does with it.
import type * as J from './trace-json';
import type * as M from './types';

// A model field of T, or why the page keeps none: "(…)".
type Target<T> = (keyof T & string) | `(${string})`;
// Every named field of W (index signatures for unnamed extra fields left out), required.
export type FieldMap<W, T> = { readonly [K in keyof W as string extends K ? never : K]-?: Target<T> };

const RAW = '(kept as JSON in meta.raw)';

export const TRACE_FIELDS = {
  '#': {
    format: '(checked by the reader: must be "minfer-trace")', version: 'version', complete: 'complete', meta: 'meta',
    graphs: 'graphs', steps: 'steps', timings: 'timings',
  } satisfies FieldMap<J.Trace, M.Trace>,

  meta: {
    model: '(meta.model below)', backend: 'backend', device: 'device', matmul_path: 'matmulPath', cuda_graph: 'cudaGraph',
    matmul_kernels: '(meta.raw: the roofline reads it)', threads: RAW, prompt: 'prompt', sampler: 'sampler', minfer_version: RAW, commit: RAW,
    recorded_at: 'recordedAt', options: RAW, compare: 'compare', tokens_from: 'tokensFrom', summaries: 'summaries',
    cupti: 'cupti', live_run: RAW, device_limits: 'deviceLimits',
  } satisfies FieldMap<J.Meta, M.TraceMeta>,
  'meta.model': {
    file: 'modelFile', sha256: RAW, size_bytes: RAW, architecture: 'architecture', name: 'modelName', hparams: 'hparams',
    weight_types: 'weightTypes',
  } satisfies FieldMap<J.Meta['model'], M.TraceMeta>,
  'meta.sampler': {
    temperature: 'temperature', top_k: 'topK', top_p: 'topP', repeat_penalty: 'repeatPenalty',
    repeat_last_n: '(not shown: the page names the penalty, not its window)', seed: 'seed', n_predict: 'nPredict',
  } satisfies FieldMap<NonNullable<J.Meta['sampler']>, M.SamplerSettings>,
  'meta.tokens_from': { file: 'file', steps: 'steps' } satisfies FieldMap<NonNullable<J.Meta['tokens_from']>, NonNullable<M.TraceMeta['tokensFrom']>>,
  'meta.cupti': {
    enabled: 'enabled', reason: 'reason', steps: 'steps', other_steps: 'otherSteps',
  } satisfies FieldMap<NonNullable<J.Meta['cupti']>, M.CuptiMeta>,
  'meta.device_limits': {
    read_gbs: 'readGbs', how: '(not shown: the docs say how it is measured)',
  } satisfies FieldMap<NonNullable<J.Meta['device_limits']>, NonNullable<M.TraceMeta['deviceLimits']>>,
  compare_meta: {
    path: 'path', backend: 'backend', mode: 'mode', teacher: 'teacher', tolerance: 'tolerance', local: 'local',
  } satisfies FieldMap<J.CompareMeta, M.PairedMeta>,
  'compare_meta.tolerance': { abs: 'abs', rel: 'rel' } satisfies FieldMap<J.CompareMeta['tolerance'], NonNullable<M.PairedMeta['tolerance']>>,
  options: {
    grid_rows: RAW, grid_cols: RAW, hist_bins: RAW, top_k: RAW, nodes: RAW, steps: RAW, stats_only: RAW, outliers: RAW,
    kernel_steps: RAW, step_by_step: RAW,
  } satisfies FieldMap<J.Options, M.TraceMeta>,

  graph: { id: 'id', phase: 'phase', n_tokens: 'nTokens', fused: 'fused', nodes: 'nodes' } satisfies FieldMap<J.Graph, M.TraceGraph>,
  graph_node: {
    id: 'id', name: 'name', op: 'op', shape: 'shape', dtype: 'dtype', src: 'src', layer: 'layer', weight: 'weight',
    weight_type: 'weightType', bias: 'bias', fused_from: 'fusedFrom', fused_into: 'fusedInto', has_output: 'hasOutput',
  } satisfies FieldMap<J.GraphNode, M.GraphNode>,

  step: {
    index: 'index', phase: 'phase', graph: 'graphId', pos: 'pos', start_ms: '(not shown: steps are placed by index)',
    time_ms: 'timeMs', tokens: 'tokens', nodes_skipped: 'nodesSkipped', nodes: 'records', logits: 'logits',
    ref_logits: 'refLogits', compare: 'compare', kernels: 'kernels', gpu_ms: 'gpuMs', gpu_busy_ms: 'gpuBusyMs',
    idle_ms: 'idleMs', event_ms: 'eventMs', host_ms: 'hostMs', kernels_dropped: 'kernelsDropped', kernels_note: 'kernelsNote',
  } satisfies FieldMap<J.Step, M.Step>,
  step_compare: {
    kl: 'kl', margin_a: 'marginA', margin_b: 'marginB', top1_a: 'top1A', top1_b: 'top1B', chosen_differs: 'chosenDiffers',
  } satisfies FieldMap<J.StepCompare, M.StepCompare>,
  token: { id: 'id', text: 'text' } satisfies FieldMap<J.Token, M.Token>,

  node_summary: {
    id: 'id', time_us: 'timeUs', start_us: 'startUs', stats: 'stats', grid: 'grid', hist: 'hist', ref: 'ref', cmp: 'cmp',
    outliers: 'outliers', act_scales: 'actScales', gpu_us: 'gpuUs', gpu_start_us: 'gpuStartUs',
  } satisfies FieldMap<J.NodeSummary, M.NodeRecord>,
  'node_summary.ref': { stats: 'stats', grid: 'grid', hist: 'hist' } satisfies FieldMap<NonNullable<J.NodeSummary['ref']>, M.RefOutput>,
  node_no_output: {
    id: 'id', no_output: 'noOutput', time_us: 'timeUs', start_us: 'startUs', gpu_us: 'gpuUs', gpu_start_us: 'gpuStartUs',
  } satisfies FieldMap<J.NodeNoOutput, M.NodeRecord>,
  metrics: { sqnr_db: 'sqnrDb', cosine: 'cosine', rel_l2: 'relL2', max_abs_diff: 'maxAbsDiff' } satisfies FieldMap<J.Metrics, M.ErrorMetrics>,
  cmp: {
    sqnr_db: 'sqnrDb', cosine: 'cosine', rel_l2: 'relL2', max_abs_diff: 'maxAbsDiff', max_abs_at: 'maxAbsAt',
    n_beyond: 'nBeyond', local: 'local',
  } satisfies FieldMap<J.Cmp, M.NodeCmp>,
  outlier: { row: 'row', col: 'col', value: 'value', ref_value: 'refValue' } satisfies FieldMap<J.Outlier, M.Outlier>,
  act_scales: {
    min: 'min', max: 'max', mean: 'mean', blocks: 'blocks', block_size: 'blockSize',
  } satisfies FieldMap<J.ActScales, M.ActScales>,
  stats: {
    min: 'min', max: 'max', mean: 'mean', absmean: 'absmean', std: 'std', count: 'count', nan: 'nan', inf: 'inf',
  } satisfies FieldMap<J.Stats, M.Stats>,
  grid: {
    rows: 'rows', cols: 'cols', row_stride: 'rowStride', col_stride: 'colStride', shape: 'shape', values: 'values',
  } satisfies FieldMap<J.Grid, M.ValueGrid>,
  hist: { lo: 'lo', hi: 'hi', counts: 'counts', underflow: 'underflow', overflow: 'overflow' } satisfies FieldMap<J.Hist, M.Histogram>,

  logits: {
    n_vocab: '(not shown: the graph names the vocabulary)', nonfinite: '(not shown)', top: 'top', entropy: 'entropy',
    chosen: 'chosen', chosen_text: 'chosenText', chosen_rank: 'chosenRank', chosen_p: 'chosenP', sampled: 'sampled',
  } satisfies FieldMap<J.Logits, M.Logits>,
  sampled: {
    temperature: 'temperature', repeat_penalty: 'repeatPenalty', top: 'top', chosen_p: 'chosenP',
  } satisfies FieldMap<J.Sampled, M.SampledDist>,
  'sampled.top[]': { id: 'id', p: 'p' } satisfies FieldMap<J.Sampled['top'][number], M.SampledDist['top'][number]>,
  top_entry: { id: 'id', text: 'text', p: 'p', logit: 'logit' } satisfies FieldMap<J.TopEntry, M.TopToken>,
  kernel: {
    name: 'name', node: 'node', unattributed: 'unattributed', covers: 'covers', graph_node: 'graphNode',
    start_ns: 'startNs', duration_ns: 'durationNs', grid: 'grid', block: 'block', registers: 'registers',
    shared_bytes: 'sharedBytes',
  } satisfies FieldMap<J.Kernel, M.Kernel>,
  timings: {
    load_ms: '(Trace.timings, as JSON)', prefill_ms: '(Trace.timings, as JSON)', decode_ms: '(Trace.timings, as JSON)',
    prefill_tok_s: '(Trace.timings, as JSON)', decode_tok_s: '(Trace.timings, as JSON)',
  } satisfies FieldMap<J.Timings, M.Trace>,
} as const;
