// Keeps the address bar on what is shown (url-state.ts: the trace or pair, step, node, view),
// so a copied URL reopens the same place. Only server traces have a URL of their own.
import { nodeKey } from '../model/graph-index';
import { graphOf, type Selection, type SelectionStore } from '../state/selection';
import { writeUrl, type UrlState } from '../url-state';

// The URL state of a selection; null for a local file or a live run.
export function urlOf(s: Readonly<Selection>): UrlState | null {
  if (!s.trace || (!s.source.trace && !s.source.a)) return null;
  const g = graphOf(s);
  const node = s.node === null || !g.nodes[s.node] ? null : nodeKey(g, s.node);
  return { ...s.source, step: s.step, node, view: s.view };
}

// A newly shown trace is written when its first step is painted (the page sets the step again).
export function syncUrl(store: SelectionStore, write: (u: UrlState) => void = writeUrl): () => void {
  return store.subscribe(['step', 'node', 'view'], (s, changed) => {
    if (changed.has('trace')) return;
    const u = urlOf(s);
    if (u) write(u);
  });
}
