// The user's moves over the selection: to a step, to a node (remembering the way back), along
// the nodes in execution order. They only change the store; the views follow by subscription.
import type { TraceGraph } from '../model/types';
import { graphOf, type SelectionStore } from './selection';

// A step the user picked. While at one of a live run's last two steps the page keeps following
// the run; moving further back stops that.
export function setStep(store: SelectionStore, i: number): void {
  const s = store.get(), t = s.trace;
  if (!t || t.steps.length === 0) return;
  i = Math.max(0, Math.min(t.steps.length - 1, i));
  if (i === s.step) return;
  store.set({ step: i, follow: i >= t.steps.length - 2 });
}

// Shows step `i` again even when it is the current one (a first paint, a live run's new step);
// leaves following as it is.
export function redrawStep(store: SelectionStore, i: number): void {
  const t = store.get().trace;
  if (!t || t.steps.length === 0) return;
  store.set({ step: Math.max(0, Math.min(t.steps.length - 1, i)) }, { force: true });
}

// Selecting a node again redraws it; the node left behind goes on the back stack.
export function selectNode(store: SelectionStore, id: number, pushBack = true): void {
  const s = store.get();
  if (!s.trace) return;
  const patch = pushBack && s.node !== null && s.node !== id ? { node: id, backStack: [...s.backStack, s.node] } : { node: id };
  store.set(patch, { force: true });
}

// Back to the node selected before; returns it (null: nothing to go back to).
export function back(store: SelectionStore): number | null {
  const stack = store.get().backStack;
  if (stack.length === 0) return null;
  const id = stack[stack.length - 1];
  store.set({ node: id, backStack: stack.slice(0, -1) }, { force: true });
  return id;
}

// The nodes that run in a step (fused-away nodes do not), in execution order.
export function executionOrder(g: TraceGraph): number[] {
  return g.nodes.filter((n) => n.fusedInto < 0).map((n) => n.id);
}

// ←/→: the next or previous node in execution order; with `wrapSteps` (play mode) past the last
// node to the next step's first. Returns the node moved to, or null at the end.
export function moveNode(store: SelectionStore, delta: number, wrapSteps = false): number | null {
  const s = store.get();
  const order = executionOrder(graphOf(s));
  let k = s.node === null ? (delta > 0 ? -1 : order.length) : order.indexOf(s.node);
  k += delta;
  if (k < 0 || k >= order.length) {
    if (!wrapSteps || s.step + 1 >= s.trace!.steps.length) return null;
    setStep(store, s.step + 1);
    k = 0;
  }
  selectNode(store, order[k]);
  return order[k];
}
