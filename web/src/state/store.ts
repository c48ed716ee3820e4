// A small observable store, as Perfetto's UI keeps its selection apart from the trace model:
// the state is one object, set() is the only way to change it, and subscribers hear which keys
// changed, so each part of the page redraws only what it shows.
export type Listener<S> = (state: Readonly<S>, changed: ReadonlySet<keyof S>) => void;

interface Subscription<S> { keys: ReadonlySet<keyof S> | null; fn: Listener<S> }

export class Store<S extends object> {
  private state: S;
  private subs: Subscription<S>[] = [];
  private queue: Set<keyof S>[] = [];
  private announcing = false;

  constructor(initial: S) {
    this.state = { ...initial };
  }

  get(): Readonly<S> {
    return this.state;
  }

  // Changes the keys in `patch`. Subscribers hear the keys whose value changed (Object.is), or
  // every key of the patch with `force` (a redraw of the same step). A set() made while the
  // subscribers hear an earlier one is announced after that one has reached all of them, so
  // every subscriber hears the changes in the order they were made; get() is always current.
  set(patch: Partial<S>, opts: { force?: boolean } = {}): void {
    const changed = new Set<keyof S>();
    for (const k of Object.keys(patch) as (keyof S)[])
      if (opts.force || !Object.is(this.state[k], patch[k])) changed.add(k);
    if (changed.size === 0) return;
    this.state = { ...this.state, ...patch };
    this.queue.push(changed);
    if (this.announcing) return;
    this.announcing = true;
    try {
      for (let c = this.queue.shift(); c; c = this.queue.shift()) this.announce(c);
    } finally {
      // A subscriber that throws drops the changes still queued, not the store.
      this.announcing = false;
      this.queue = [];
    }
  }

  // `keys`: the keys the listener cares about (null: every change). Returns the unsubscribe.
  subscribe(keys: readonly (keyof S)[] | null, fn: Listener<S>): () => void {
    const sub: Subscription<S> = { keys: keys ? new Set(keys) : null, fn };
    this.subs = [...this.subs, sub];   // a new array: an announcement in progress goes on over the old one
    return () => { this.subs = this.subs.filter((s) => s !== sub); };
  }

  private announce(changed: ReadonlySet<keyof S>): void {
    for (const sub of this.subs) {
      if (!this.subs.includes(sub)) continue;   // unsubscribed by an earlier listener
      if (sub.keys && ![...changed].some((k) => sub.keys!.has(k))) continue;
      sub.fn(this.state, changed);
    }
  }
}
