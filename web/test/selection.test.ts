// The selection and the user's moves over it: steps clamp, nodes walk in execution order and
// remember the way back, a comparison opens on its first divergence, the URL follows.
import { describe, expect, it } from 'vitest';
import { parseComparison } from '../src/model/compare';
import { parseTrace } from '../src/model/parse';
import { back, executionOrder, moveNode, redrawStep, selectNode, setStep } from '../src/state/navigation';
import { graphOf, openingSelection, selectionStore, type Loaded } from '../src/state/selection';
import { syncUrl, urlOf } from '../src/page/url-sync';
import type { UrlState } from '../src/url-state';
import { makeComparison, makeV2Trace } from './fixtures/make-fixtures';

const docA = makeV2Trace({ decodeSteps: 4 });
const trace = () => parseTrace(docA, 'a.json');
const source = { trace: 'a.json', a: null, b: null };
const opened = (l: Partial<Loaded> = {}) => {
  const st = selectionStore();
  st.set(openingSelection({ trace: trace(), traceB: null, cmp: null, source, ...l }, null, 'ops'));
  return st;
};

describe('opening a trace', () => {
  it('starts at step 0, or at the deep link\'s step and view', () => {
    const t = trace();
    expect(openingSelection({ trace: t, traceB: null, cmp: null, source }, null, 'pipeline')).toMatchObject({ step: 0, node: null, view: 'pipeline', metric: 'absmax', tab: 'tokens' });
    expect(openingSelection({ trace: t, traceB: null, cmp: null, source }, { step: 3, view: 'ops' }, 'pipeline')).toMatchObject({ step: 3, view: 'ops' });
    expect(openingSelection({ trace: t, traceB: null, cmp: null, source }, { step: 99, view: null }, 'ops').step).toBe(0);   // past the end: ignored
  });

  it('a comparison opens on its first divergence, coloured by error', () => {
    const a = makeV2Trace({ decodeSteps: 2, layers: 2 }), b = makeV2Trace({ decodeSteps: 2, layers: 2, matmulPath: 'f16', noise: 0.02 });
    const cmp = parseComparison(makeComparison(a, b, ['a.json', 'b.json']), 'cmp');
    const sel = openingSelection({ trace: parseTrace(a, 'a.json'), traceB: parseTrace(b, 'b.json'), cmp, source: { trace: null, a: 'a.json', b: 'b.json' } }, null, 'ops');
    expect(cmp.firstDivergent).not.toBeNull();
    expect(sel).toMatchObject({ metric: 'error', tab: 'compare', step: cmp.firstDivergent!.step });
  }, 30000);
});

describe('navigation', () => {
  it('clamps steps and follows a live run only from its last steps', () => {
    const st = opened();
    setStep(st, 99);
    expect(st.get()).toMatchObject({ step: 4, follow: true });
    setStep(st, -5);
    expect(st.get()).toMatchObject({ step: 0, follow: false });
    let heard = 0;
    st.subscribe(['step'], () => heard++);
    setStep(st, 0);           // already there: nothing to redraw
    redrawStep(st, 0);        // a forced redraw is heard and leaves following alone
    expect(heard).toBe(1);
    expect(st.get().follow).toBe(false);
  });

  it('does nothing without a trace', () => {
    const st = selectionStore();
    setStep(st, 3);
    selectNode(st, 2);
    expect(st.get()).toMatchObject({ step: 0, node: null });
  });

  it('walks nodes in execution order, across steps in play mode', () => {
    const st = opened();
    const order = executionOrder(graphOf(st.get()));
    expect(order.length).toBeLessThan(graphOf(st.get()).nodes.length);   // fused-away nodes do not run
    expect(moveNode(st, 1)).toBe(order[0]);
    expect(moveNode(st, 1)).toBe(order[1]);
    expect(moveNode(st, -1)).toBe(order[0]);
    expect(moveNode(st, -1)).toBeNull();             // before the first node
    selectNode(st, order[order.length - 1]);
    expect(moveNode(st, 1)).toBeNull();              // past the last, not in play mode
    expect(moveNode(st, 1, true)).toBe(order[0]);    // play mode: the next step's first node
    expect(st.get().step).toBe(1);
  });

  it('remembers the way back', () => {
    const st = opened();
    selectNode(st, 5);
    selectNode(st, 7);
    selectNode(st, 7);   // the same node again: redrawn, not stacked
    selectNode(st, 9);
    expect(st.get().backStack).toEqual([5, 7]);
    expect(back(st)).toBe(7);
    expect(back(st)).toBe(5);
    expect(back(st)).toBeNull();
    expect(st.get()).toMatchObject({ node: 5, backStack: [] });
  });
});

describe('URL', () => {
  it('holds the server trace, step, node name and view; nothing for a local file', () => {
    const st = opened();
    const written: UrlState[] = [];
    syncUrl(st, (u) => written.push(u));
    setStep(st, 2);
    const g = graphOf(st.get());
    const q = g.nodes.find((n) => n.name === 'blk.0.attn_q')!;
    selectNode(st, q.id);
    st.set({ view: 'pipeline' });
    expect(written.at(-1)).toEqual({ trace: 'a.json', a: null, b: null, step: 2, node: 'blk.0.attn_q', view: 'pipeline' });
    expect(written.length).toBe(3);
    st.set(openingSelection({ trace: trace(), traceB: null, cmp: null, source }, null, 'ops'), { force: true });
    expect(written.length).toBe(3);   // a new trace: written when its first step is painted
    expect(urlOf({ ...st.get(), source: { trace: null, a: null, b: null } })).toBeNull();
  });
});
