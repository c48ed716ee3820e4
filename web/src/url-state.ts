// Deep links: the URL holds what is shown — the trace (or the pair a/b), the step, the node
// (by name, stable across the prefill and decode graphs) and the view. Updated in place
// (history.replaceState) as the user moves, so a copied URL reopens the same place.
export interface UrlState {
  trace: string | null; a: string | null; b: string | null;
  step: number | null; node: string | null; view: 'ops' | 'pipeline' | null;
}

export function readUrl(search: string): UrlState {
  const q = new URLSearchParams(search);
  const step = q.get('step');
  const view = q.get('view');
  return {
    trace: q.get('trace'), a: q.get('a'), b: q.get('b'),
    step: step !== null && /^\d+$/.test(step) ? Number(step) : null,
    node: q.get('node'),
    view: view === 'pipeline' || view === 'ops' ? view : null,
  };
}

// A live run's page (?live=ID, set when the Run panel starts one): the run to follow, or null.
export function readLiveRun(search: string): number | null {
  const live = new URLSearchParams(search).get('live');
  return live && /^\d+$/.test(live) ? Number(live) : null;
}

export function urlSearch(s: UrlState): string {
  const q = new URLSearchParams();
  if (s.a && s.b) { q.set('a', s.a); q.set('b', s.b); } else if (s.trace) q.set('trace', s.trace);
  if (s.step !== null) q.set('step', String(s.step));
  if (s.node) q.set('node', s.node);
  if (s.view === 'pipeline') q.set('view', 'pipeline');
  const t = q.toString();
  return t ? `?${t}` : '';
}

let timer: ReturnType<typeof setTimeout> | null = null;

// Writes the state into the address bar, at most every 150 ms (play mode moves fast).
export function writeUrl(s: UrlState): void {
  if (timer) clearTimeout(timer);
  timer = setTimeout(() => {
    timer = null;
    const next = urlSearch(s);
    if (next !== location.search) history.replaceState(null, '', location.pathname + next);
  }, 150);
}
