// The selection store: set() announces the keys that changed, in order, to the subscribers
// that asked for them.
import { describe, expect, it } from 'vitest';
import { Store } from '../src/state/store';

interface S { a: number; b: string; c: number[] }
const make = () => new Store<S>({ a: 0, b: 'x', c: [] });

describe('store', () => {
  it('announces only the keys whose value changed', () => {
    const st = make();
    const heard: string[][] = [];
    st.subscribe(null, (_, changed) => heard.push([...changed] as string[]));
    st.set({ a: 1, b: 'x' });
    st.set({ a: 1 });            // no change: nobody hears it
    st.set({ b: 'y' });
    expect(heard).toEqual([['a'], ['b']]);
    expect(st.get()).toEqual({ a: 1, b: 'y', c: [] });
  });

  it('force announces every key of the patch', () => {
    const st = make();
    const heard: string[][] = [];
    st.subscribe(null, (_, changed) => heard.push([...changed] as string[]));
    st.set({ a: 0, b: 'x' }, { force: true });
    expect(heard).toEqual([['a', 'b']]);
  });

  it('tells a subscriber only of the keys it asked for', () => {
    const st = make();
    const a: number[] = [], b: string[] = [];
    st.subscribe(['a'], (s) => a.push(s.a));
    st.subscribe(['b', 'c'], (s) => b.push(s.b));
    st.set({ a: 1 });
    st.set({ b: 'y' });
    st.set({ a: 2, c: [1] });
    expect(a).toEqual([1, 2]);
    expect(b).toEqual(['y', 'y']);
  });

  it('unsubscribes', () => {
    const st = make();
    let n = 0;
    const off = st.subscribe(null, () => n++);
    st.set({ a: 1 });
    off();
    st.set({ a: 2 });
    expect(n).toBe(1);
  });

  it('announces a set made by a subscriber after the current one reached everybody', () => {
    const st = make();
    const log: string[] = [];
    st.subscribe(null, (s, changed) => {
      log.push(`first ${[...changed].join()} a=${s.a}`);
      if (changed.has('a') && s.a === 1) st.set({ b: 'from first' });
    });
    st.subscribe(null, (s, changed) => log.push(`second ${[...changed].join()} b=${s.b}`));
    st.set({ a: 1 });
    expect(log).toEqual([
      'first a a=1',
      'second a b=from first',     // get() is always current…
      'first b a=1',               // …but the nested change is heard after the first one
      'second b b=from first',
    ]);
  });

  it('a subscriber added or removed while announcing does not change who hears that change', () => {
    const st = make();
    const log: string[] = [];
    let offB = () => {};
    st.subscribe(null, (s) => {
      log.push(`a${s.a}`);
      if (s.a === 1) { offB(); st.subscribe(null, (x) => log.push(`c${x.a}`)); }
    });
    offB = st.subscribe(null, (s) => log.push(`b${s.a}`));
    st.set({ a: 1 });
    st.set({ a: 2 });
    expect(log).toEqual(['a1', 'a2', 'c2']);
  });

  it('keeps working after a subscriber throws', () => {
    const st = make();
    let ok = 0;
    st.subscribe(['a'], () => { throw new Error('view failed'); });
    st.subscribe(['b'], () => ok++);
    expect(() => st.set({ a: 1 })).toThrow('view failed');
    expect(st.get().a).toBe(1);
    st.set({ b: 'y' });
    expect(ok).toBe(1);
  });
});
