// The live-run controller against a fake EventSource: the events of docs/live-runs.md build the
// trace, the page is shown once the graph is known and redrawn at most once per frame, the view
// follows the newest finished step until the user moves back, and the run's end, its failure
// and a lost connection are told.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runEvents, type RunRequest } from '../src/io/live';
import { LiveRunController, type LiveDeps, type LivePage } from '../src/page/live-run';
import { setStep } from '../src/state/navigation';
import { selectionStore, type Loaded } from '../src/state/selection';
import { makeV2Trace } from './fixtures/make-fixtures';

// An EventSource that the test drives: emit(type, data) as the server would send it.
class FakeEventSource {
  static last: FakeEventSource | null = null;
  closed = false;
  onerror: (() => void) | null = null;
  private listeners = new Map<string, ((e: { data: string }) => void)[]>();
  constructor(readonly url: string) { FakeEventSource.last = this; }
  addEventListener(type: string, f: (e: { data: string }) => void) { this.listeners.set(type, [...(this.listeners.get(type) ?? []), f]); }
  close() { this.closed = true; }
  emit(type: string, data: object) { if (!this.closed) for (const f of this.listeners.get(type) ?? []) f({ data: JSON.stringify(data) }); }
  fail() { if (!this.closed) this.onerror?.(); }
}

const doc = makeV2Trace({ decodeSteps: 3 });
const graph = (id: 'prefill' | 'decode') => doc.graphs.find((g) => g.id === id)!;

function setup() {
  const store = selectionStore();
  const frames: (() => void)[] = [];
  let clock = 1000;
  const calls: string[] = [];
  const banner = { root: {} as HTMLElement, progress: vi.fn(), done: vi.fn(), failed: vi.fn() };
  const marks: Record<string, string | undefined> = {};
  const deps: LiveDeps = {
    events: runEvents, start: vi.fn(async () => ({ id: 7, trace: 'live-7.json', events: '' })), cancel: vi.fn(async () => true),
    list: vi.fn(async () => [{ name: 'live-7.json', size: 1 }, { name: 'other.json', size: 1 }, { name: 'bad.json', size: 1, error: 'x' }]),
    frame: (f) => frames.push(f), now: () => clock, banner: () => banner, marks,
    setUrl: (search) => calls.push(`url ${search}`),
  };
  // The page: shows what it is asked to, as the app would (the store gets the trace).
  const page: LivePage = {
    busy: (text) => calls.push(`busy ${text}`),
    show: (l: Loaded) => { calls.push('show'); store.set({ trace: l.trace, traceB: null, cmp: null, source: l.source, step: 0, node: null }, { force: true }); },
    stepsGrew: (n) => calls.push(`steps ${n}`),
    tokensChanged: () => calls.push('tokens'),
    recolour: (clear, mark) => calls.push(`recolour${clear ? ' clear' : ''}${mark ? ` mark ${mark.join()}` : ''}`),
  };
  const live = new LiveRunController(store, page, deps);
  const runFrame = () => { const fs = frames.splice(0); fs.forEach((f) => f()); return fs.length; };
  return { store, live, calls, banner, marks, deps, frames, runFrame, tick: (ms: number) => { clock += ms; } };
}

const es = () => FakeEventSource.last!;
const stepEvents = (k: number) => {
  const g = k === 0 ? 'prefill' : 'decode';
  es().emit('step', { step: k, phase: g, graph: g, pos: k, tokens: [{ id: 1, text: 'a' }] });
  for (const n of graph(g).nodes.slice(0, 3)) es().emit('node', { step: k, id: n.id, stats: { min: -1, max: 1, mean: 0, absmean: 0.5, std: 0.6, count: 4, nan: 0, inf: 0 }, time_us: 3 });
  es().emit('token', { step: k, id: 9, text: ' b', p: 0.5, top: [{ id: 9, text: ' b', p: 0.5 }] });
  es().emit('step_end', { step: k, time_ms: 1.5 });
};

describe('live-run controller', () => {
  beforeEach(() => { vi.stubGlobal('EventSource', FakeEventSource); FakeEventSource.last = null; });
  afterEach(() => { vi.unstubAllGlobals(); });

  it('Run starts the run, names it in the URL and listens to its events', async () => {
    const { live, calls, deps } = setup();
    await live.start({ model: 'm.gguf' } as RunRequest);
    expect(deps.start).toHaveBeenCalled();
    expect(calls.slice(0, 2)).toEqual(['url ?live=7', 'busy waiting for run 7…']);
    expect(es().url).toBe('api/run/events?id=7');
  });

  it('builds the trace from the events and shows it once its graph is known', () => {
    const { live, store, calls, marks, runFrame } = setup();
    live.attach(3);
    es().emit('start', { id: 3, model: 'm.gguf', prompt: 'hi', trace: 'live-3.json', max_tokens: 4, meta: doc.meta });
    expect(marks.live).toBe('running');
    expect(calls).toEqual(['busy waiting for run 3…']);
    es().emit('graph', { graph: graph('prefill') });
    expect(calls.at(-1)).toBe('show');
    const t = store.get().trace!;
    expect(t.name).toBe('live run 3 → live-3.json');
    es().emit('graph', { graph: graph('decode') });
    stepEvents(0);
    expect(t.steps[0].records.size).toBe(3);
    expect(t.steps[0].logits?.chosen).toBe(9);
    expect(marks.liveStep).toBe('0');
    // Every event above asked for one redraw, which comes with the next frame.
    expect(calls.filter((c) => c.startsWith('recolour'))).toEqual([]);
    expect(runFrame()).toBe(1);
    expect(calls.slice(2)).toEqual(['steps 1', 'tokens', `recolour clear mark ${graph('prefill').nodes[2].id}`]);
    expect(store.get().step).toBe(0);
  });

  it('follows the newest finished step until the user moves back, then stays', () => {
    const { live, store, runFrame, tick } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-3.json', meta: doc.meta });
    es().emit('graph', { graph: graph('prefill') });
    es().emit('graph', { graph: graph('decode') });
    for (const k of [0, 1, 2]) stepEvents(k);
    runFrame();
    expect(store.get().step).toBe(2);
    setStep(store, 0);                    // the user looks back at the prefill
    expect(store.get().follow).toBe(false);
    stepEvents(3);
    tick(1000); runFrame();
    expect(store.get().step).toBe(0);
    setStep(store, 2);                    // back at one of the last two steps: follow again
    stepEvents(4);
    tick(1000); runFrame();
    expect(store.get().step).toBe(4);
  });

  it('redraws the Tokens tab at most every 250 ms', () => {
    const { live, calls, runFrame, tick } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-3.json', meta: doc.meta });
    es().emit('graph', { graph: graph('prefill') });
    es().emit('graph', { graph: graph('decode') });
    stepEvents(0);
    runFrame();
    stepEvents(1);
    tick(100); runFrame();                // too soon: the tokens wait for a later frame
    expect(calls.filter((c) => c === 'tokens').length).toBe(1);
    tick(200); runFrame();
    expect(calls.filter((c) => c === 'tokens').length).toBe(2);
  });

  it('done: the banner offers the saved trace and the others to compare with', async () => {
    const { live, banner, marks, runFrame, store } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-7.json', meta: doc.meta });
    es().emit('graph', { graph: graph('prefill') });
    stepEvents(0);
    es().emit('done', { id: 3, trace: 'live-7.json', cancelled: false, steps: 1, generated: 1 });
    expect(es().closed).toBe(true);       // no reconnect and replay
    await vi.waitFor(() => expect(marks.live).toBe('done'));
    const msg = 'Done: 1 step(s), 1 token(s) generated; saved as live-7.json';
    expect(banner.done).toHaveBeenCalledWith(msg, 'live-7.json', [{ name: 'other.json', size: 1 }]);
    runFrame();
    expect(store.get().trace!.complete).toBe(true);
    expect(banner.progress).toHaveBeenLastCalledWith(msg);
  });

  it('a run cancelled before its first step saved nothing', async () => {
    const { live, banner, marks } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-3.json', meta: doc.meta });
    es().emit('done', { id: 3, trace: null, cancelled: true, steps: 0, generated: 0 });
    await vi.waitFor(() => expect(marks.live).toBe('done'));
    expect(banner.done).toHaveBeenCalledWith('Cancelled: 0 step(s), 0 token(s) generated; no trace saved', '', expect.anything());
  });

  it('the server\'s error event and a lost connection are shown', () => {
    const { live, banner, marks } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-3.json', meta: doc.meta });
    es().emit('error', { id: 3, message: 'prompt longer than the context' });
    expect(banner.failed).toHaveBeenCalledWith('prompt longer than the context');
    expect(marks.live).toBe('error');
    expect(es().closed).toBe(true);
    live.attach(4);
    es().fail();
    expect(banner.failed).toHaveBeenLastCalledWith('the connection to the server was lost');
  });

  it('Cancel asks the server to stop the run', () => {
    const banners: (() => void)[] = [];
    const { live, deps } = setup();
    deps.banner = (onCancel) => { banners.push(onCancel); return { root: {} as HTMLElement, progress() {}, done() {}, failed() {} }; };
    live.attach(3);
    banners[0]();
    expect(deps.cancel).toHaveBeenCalled();
  });

  it('stops redrawing once the user opened something else, and closes on request', () => {
    const { live, store, calls, runFrame } = setup();
    live.attach(3);
    es().emit('start', { id: 3, trace: 'live-3.json', meta: doc.meta });
    es().emit('graph', { graph: graph('prefill') });
    stepEvents(0);
    store.set({ trace: null });          // another trace replaced the run on screen
    const before = calls.length;
    runFrame();
    stepEvents(1);
    runFrame();
    expect(calls.length).toBe(before);
    const first = es();
    live.attach(5);                      // attaching another run closes the first stream
    expect(first.closed).toBe(true);
    live.close();
    expect(es().closed).toBe(true);
  });
});
