// Play: steps at `speed` per second to the last step, from the start when at the end; nodes at
// 4 × `speed` per second; a new speed or mode restarts a running play at its pace.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseTrace } from '../src/model/parse';
import { Playback } from '../src/playback';
import { setStep } from '../src/state/navigation';
import { openingSelection, selectionStore } from '../src/state/selection';
import { makeV2Trace } from './fixtures/make-fixtures';

const trace = parseTrace(makeV2Trace({ decodeSteps: 3 }), 'a.json');   // steps 0..3

function setup() {
  const store = selectionStore();
  store.set(openingSelection({ trace, traceB: null, cmp: null, source: { trace: null, a: null, b: null } }, null, 'ops'));
  const playing: boolean[] = [];
  let nodes = 0;
  const p = new Playback(store, () => ++nodes < 3, (on) => playing.push(on));
  return { store, p, playing, nodes: () => nodes };
}

describe('playback', () => {
  beforeEach(() => { vi.useFakeTimers(); vi.stubGlobal('window', globalThis); });
  afterEach(() => { vi.useRealTimers(); vi.unstubAllGlobals(); });

  it('plays steps to the last one and stops', () => {
    const { store, p, playing } = setup();
    p.toggle();
    vi.advanceTimersByTime(499);            // speed 2: one step per 500 ms
    expect(store.get().step).toBe(0);
    vi.advanceTimersByTime(1);
    expect(store.get().step).toBe(1);
    vi.advanceTimersByTime(5000);
    expect(store.get().step).toBe(3);
    expect(playing).toEqual([true, false]);
  });

  it('starts from the first step when at the last; toggling pauses', () => {
    const { store, p, playing } = setup();
    setStep(store, 3);
    p.toggle();
    expect(store.get().step).toBe(0);
    p.toggle();
    vi.advanceTimersByTime(5000);
    expect(store.get().step).toBe(0);
    expect(playing).toEqual([true, false]);
  });

  it('plays nodes until there is no next one', () => {
    const { store, p, nodes } = setup();
    store.set({ playMode: 'nodes' });
    p.toggle();
    vi.advanceTimersByTime(125);            // 250 ms / speed 2
    expect(nodes()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(nodes()).toBe(3);                // the third move found no next node: stopped
  });

  it('a new speed restarts a running play at the new pace', () => {
    const { store, p } = setup();
    p.toggle();
    vi.advanceTimersByTime(400);
    store.set({ speed: 8 });                // 125 ms per step from now
    vi.advanceTimersByTime(125);
    expect(store.get().step).toBe(1);
    store.set({ speed: 1 });
    p.stop();
    vi.advanceTimersByTime(5000);
    expect(store.get().step).toBe(1);
  });

  it('does nothing without a trace', () => {
    const p = new Playback(selectionStore(), () => true, () => { throw new Error('started'); });
    p.toggle();
  });
});
