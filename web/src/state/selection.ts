// What the page shows, in one object held by a Store: the trace and its compare partner, the
// step, the node, the view, the colour metric, the bottom tab and the playback settings.
// The trace model itself (model/) stays apart; this is only which part of it is on screen.
import type { Comparison } from '../model/compare';
import type { MetricId } from '../model/metrics';
import type { Stage } from '../model/pipeline';
import type { Trace, TraceGraph } from '../model/types';
import { Store } from './store';

export type View = 'ops' | 'pipeline';
export type Tab = 'tokens' | 'timings' | 'kernels' | 'roofline' | 'compare';
export type PlayMode = 'steps' | 'nodes';

// The server's names for what is shown (what the URL holds); all null for a local file or a live run.
export interface TraceSource { trace: string | null; a: string | null; b: string | null }

// What a load hands the page: A, and B with the comparison when two runs are shown.
export interface Loaded { trace: Trace; traceB: Trace | null; cmp: Comparison | null; source: TraceSource }

export interface Selection {
  trace: Trace | null;
  traceB: Trace | null;        // the compare partner: the other trace, or a paired trace's reference run
  cmp: Comparison | null;
  source: TraceSource;
  step: number;
  node: number | null;
  backStack: number[];         // nodes selected before this one (Backspace goes back)
  stage: Stage | null;         // the pipeline view's selected stage
  view: View;
  metric: MetricId;
  tab: Tab;
  speed: number;
  playMode: PlayMode;
  follow: boolean;             // a live run: show each new step as it finishes
}

export type SelectionStore = Store<Selection>;

export function selectionStore(): SelectionStore {
  return new Store<Selection>({
    trace: null, traceB: null, cmp: null, source: { trace: null, a: null, b: null },
    step: 0, node: null, backStack: [], stage: null, view: 'ops', metric: 'absmax', tab: 'tokens',
    speed: 2, playMode: 'steps', follow: true,
  });
}

// The graph that step `step` ran (a trace without steps yet: its first graph).
export function graphOf(s: Readonly<Selection>, step = s.step): TraceGraph {
  const t = s.trace!;
  const st = t.steps[step];
  return st ? t.graphs.get(st.graphId)! : [...t.graphs.values()][0];
}

// Where a comparison opens: the node that first adds error (else the first that diverges).
export function firstDivergence(cmp: Comparison | null): { step: number; node: number } | null {
  return cmp?.firstLocal ?? cmp?.firstDivergent ?? null;
}

// The selection a newly shown trace starts with. A deep link's step and view win; the view
// otherwise stays as it was; a comparison opens on its first divergence, coloured by error.
export function openingSelection(l: Loaded, want: { step: number | null; view: View | null } | null, view: View): Partial<Selection> {
  let step = firstDivergence(l.cmp)?.step ?? 0;
  if (want?.step !== null && want?.step !== undefined && want.step < l.trace.steps.length) step = want.step;
  return {
    trace: l.trace, traceB: l.traceB, cmp: l.cmp, source: l.source,
    step, node: null, backStack: [], stage: null, view: want?.view ?? view,
    metric: l.cmp ? 'error' : 'absmax', tab: l.cmp ? 'compare' : 'tokens',
  };
}
