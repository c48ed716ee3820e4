// A trace built while it runs, from the live-run events of minfer-viz (docs/live-runs.md):
// start → graph* → (step → node* → token → step_end)* → done | error. Pure functions over the
// same Trace model the recorded traces use, so every view works on a live run unchanged.
import { Checker, type Obj } from './checked';
import { parseGraph, parseMeta, parseNodeRecord } from './parse-v2';
import type { Step, Trace } from './types';

export interface LiveStart { id: number; model: string; prompt: string; trace: string; max_tokens: number; meta: Obj }

export function liveTrace(start: LiveStart): Trace {
  const c = new Checker('live run');
  return {
    name: `live run ${start.id} → ${start.trace}`, version: 2, complete: false,
    meta: parseMeta(c, start.meta ?? {}),
    graphs: new Map(), steps: [], timings: null,
    warnings: ['Live run: nodes light up as the engine reports them (statistics only; the saved trace has the value grids and histograms).'],
  };
}

export function applyGraph(t: Trace, data: Obj): void {
  const g = parseGraph(new Checker('live graph'), new Checker('live graph').obj(data.graph, 'graph'), 'graph');
  t.graphs.set(g.id, g);
}

export function applyStep(t: Trace, d: Obj): Step {
  const c = new Checker('live step');
  const index = c.int(d.step, 'step');
  const graphId = c.str(d.graph, 'graph');
  if (!t.graphs.has(graphId)) c.fail('graph', `no graph "${graphId}" was announced before step ${index}`);
  const step: Step = {
    index, phase: c.str(d.phase, 'phase'), graphId, pos: c.optNum(d.pos, 'pos') ?? 0,
    tokens: c.arr(d.tokens ?? [], 'tokens').map((x, i) => { const o = c.obj(x, `tokens[${i}]`); return { id: c.int(o.id, 'id'), text: c.optStr(o.text, 'text') ?? '' }; }),
    timeMs: null, records: new Map(), nodesSkipped: false, logits: null, kernels: [],
  };
  t.steps[index] = step;
  return step;
}

// A node event is the trace's node record (statistics only) with its step: read by the trace's
// own record reader. Returns the node id.
export function applyNode(t: Trace, d: Obj): number {
  const c = new Checker('live node');
  const step = t.steps[c.int(d.step, 'step')];
  const id = c.int(d.id, 'id');
  if (!step) return id;
  step.records.set(id, parseNodeRecord(c, d, 'node'));
  return id;
}

export function applyToken(t: Trace, d: Obj): void {
  const c = new Checker('live token');
  const step = t.steps[c.int(d.step, 'step')];
  if (!step) return;
  const top = c.arr(d.top ?? [], 'top').map((x, i) => {
    const o = c.obj(x, `top[${i}]`);
    return { id: c.int(o.id, 'id'), text: c.optStr(o.text, 'text') ?? '', p: c.num(o.p, 'p'), logit: null };
  });
  const chosen = c.int(d.id, 'id');
  const rank = top.findIndex((x) => x.id === chosen);
  step.logits = { top, entropy: null, chosen, chosenText: c.optStr(d.text, 'text') ?? '', chosenRank: rank >= 0 ? rank : null, chosenP: c.optNum(d.p, 'p') };
}

export function applyStepEnd(t: Trace, d: Obj): void {
  const c = new Checker('live step_end');
  const step = t.steps[c.int(d.step, 'step')];
  if (step) step.timeMs = c.optNum(d.time_ms, 'time_ms');
}
