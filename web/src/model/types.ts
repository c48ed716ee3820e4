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
}

export interface TopToken { id: number; text: string; p: number; logit: number | null }

export interface Logits {
  top: TopToken[];
  entropy: number | null;   // nats
  chosen: number | null;
  chosenText: string | null;
  chosenRank: number | null;
  chosenP: number | null;
}

export interface Kernel {
  name: string; node: number; startNs: number; durationNs: number;
  grid: number[]; block: number[]; registers: number | null; sharedBytes: number | null;
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
}

export interface Trace {
  name: string;             // where it came from (server name or file name)
  version: 1 | 2;
  complete: boolean;
  meta: TraceMeta;
  graphs: Map<string, TraceGraph>;
  steps: Step[];
  timings: Record<string, unknown> | null;
  warnings: string[];       // shown in the page (incomplete trace, derived histograms …)
}
