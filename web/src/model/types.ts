// The one internal trace model every view reads. Both file versions (v1 upstream layout and
// v2) normalize into it, so views never look at raw JSON.

export interface GraphNode {
  id: number;
  name: string;
  op: string;
  shape: number[];          // token-major [rows, cols]
  dtype: string;
  src: number[];
  layer: number;            // -1 outside the transformer blocks
  weight: string | null;
  weightType: string | null;
  bias: string | null;
  fusedFrom: string[];
  fusedInto: number;        // -1, or the node this one was folded into
  hasOutput: boolean;
}

export interface TraceGraph {
  id: string;
  phase: string;
  nTokens: number;
  fused: boolean;
  nodes: GraphNode[];
  consumers: number[][];    // consumers[id] = ids of nodes that read node id
}

export interface Stats {
  min: number; max: number; mean: number; absmean: number;
  std: number | null; count: number | null; nan: number; inf: number;
}

export interface ValueGrid {
  rows: number; cols: number;
  rowStride: number; colStride: number;
  shape: number[];          // full tensor shape the grid samples
  values: Float32Array;     // rows*cols, row-major; NaN where the trace wrote null
  flattened: boolean;       // v1: samples of the flattened tensor, not a 2-D grid
}

export interface Histogram {
  lo: number; hi: number; counts: number[];
  underflow: number; overflow: number;
  derived: boolean;         // computed here from the sampled values (v1 traces)
}

export interface NodeRecord {
  id: number;
  timeUs: number | null;
  startUs: number | null;   // start of the node since the step start (host clock)
  stats: Stats | null;
  grid: ValueGrid | null;
  hist: Histogram | null;
  noOutput: string | null;  // "kv_store" | "fused" | …: the node has nothing to show
  // v3 (paired traces, docs/trace-format.md): absent in v1/v2 and on nodes without output.
  cmp?: NodeCmp | null;       // A's full tensor against the reference run B
  ref?: RefOutput | null;     // B's output summary for this node
  outliers?: Outlier[];       // largest |x| of the full tensor, |x| descending
  actScales?: ActScales | null; // MMQ: the activation's int8 block scales
  // v3 (#9, CUDA kernel attribution)
  gpuUs?: number | null;
  gpuStartUs?: number | null;
}

// Full-tensor error metrics of a node, B the reference. Non-finite values arrive as null.
export interface ErrorMetrics {
  sqnrDb: number | null;      // 10·log10(Σb² / Σ(a−b)²), capped to [−200, 200]
  cosine: number | null;
  relL2: number | null;       // ‖a−b‖ / ‖b‖
  maxAbsDiff: number | null;
}

export interface NodeCmp extends ErrorMetrics {
  maxAbsAt: [number, number] | null;   // [row, col] of max |a−b|
  nBeyond: number | null;     // elements with |a−b| > abs + rel·|b| (meta.compare.tolerance)
  local: ErrorMetrics | null; // the error the node adds itself (its op on A's own inputs)
}

export interface RefOutput { stats: Stats | null; grid: ValueGrid | null; hist: Histogram | null }

export interface Outlier { row: number; col: number; value: number; refValue: number | null }

export interface ActScales { min: number; max: number; mean: number; blocks: number; blockSize: number }

export interface TopToken { id: number; text: string; p: number; logit: number | null }

export interface Logits {
  top: TopToken[];
  entropy: number | null;   // nats
  chosen: number | null;
  chosenText: string | null;
  chosenRank: number | null;
  chosenP: number | null;
  sampled?: SampledDist | null;  // v3: what the sampler drew from (after penalty, temperature)
}

export interface SampledDist {
  temperature: number | null;
  repeatPenalty: number | null;
  top: { id: number; p: number }[];
  chosenP: number | null;
}

// v3 paired step summary: A against its reference B over the full vocabulary.
export interface StepCompare {
  kl: number | null;          // KL(A‖B), nats, temperature 1
  marginA: number | null;     // p(top1) − p(top2)
  marginB: number | null;
  top1A: number | null;
  top1B: number | null;
  chosenDiffers: boolean;
}

export interface Kernel {
  name: string; node: number; startNs: number; durationNs: number;
  grid: number[]; block: number[]; registers: number | null; sharedBytes: number | null;
  unattributed?: string | null;   // v3: why node is -1
  graphNode?: number | null;      // v3: CUDA graph node id
  covers?: number[];              // v3: a fused kernel, every node it computes (node is the last)
}

export interface Token { id: number; text: string }

export interface Step {
  index: number;
  phase: string;
  graphId: string;
  pos: number;
  tokens: Token[];          // input tokens of the step
  timeMs: number | null;
  records: Map<number, NodeRecord>;
  pending?: boolean;        // sliced loading: the step's records have not arrived yet
  nodesSkipped: boolean;    // the recorder was told not to record nodes in this step
  logits: Logits | null;
  kernels: Kernel[];
  // v3 paired traces
  refLogits?: Logits | null;  // B's logits on the same step (chosen = what B would pick)
  compare?: StepCompare | null;
  // v3 (#9, CUDA)
  gpuMs?: number | null;      // first kernel start to last kernel end (else the event pair's time)
  eventMs?: number | null;    // GPU time between CUDA events around the step (every traced step)
  gpuBusyMs?: number | null;  // union of kernel intervals
  idleMs?: number | null;
  hostMs?: number | null;
  kernelsDropped?: number | null;
  kernelsNote?: string | null;
}

export interface TraceMeta {
  modelFile: string;
  modelName: string;
  architecture: string;
  hparams: Record<string, unknown>;
  weightTypes: Record<string, string>;
  backend: string;
  device: string;
  matmulPath: string;
  cudaGraph: boolean | null;
  prompt: string;
  recordedAt: string;
  raw: Record<string, unknown>;
  sampler?: SamplerSettings | null;
  compare?: PairedMeta | null;  // v3: the trace is paired (A = matmulPath, B = compare.path)
  tokensFrom?: { file: string; steps: number | null } | null;
  summaries?: string | null;    // v3 (#9): "device" | "host"
  cupti?: CuptiMeta | null;
  deviceLimits?: { readGbs: number } | null;   // v3 (cuda): the streaming read bandwidth measured at record time
}

export interface SamplerSettings {
  temperature: number | null; topK: number | null; topP: number | null;
  repeatPenalty: number | null; seed: number | null; nPredict: number | null;
}

export interface PairedMeta {
  path: string; backend: string; mode: string; teacher: string;
  tolerance: { abs: number; rel: number } | null;
  local: boolean;
}

export interface CuptiMeta { enabled: boolean; reason: string | null; steps: string | null; otherSteps: string | null }

export interface Trace {
  name: string;             // where it came from (server name or file name)
  version: 1 | 2 | 3;
  complete: boolean;
  meta: TraceMeta;
  graphs: Map<string, TraceGraph>;
  steps: Step[];
  timings: Record<string, unknown> | null;
  warnings: string[];       // shown in the page (incomplete trace, derived histograms …)
}
