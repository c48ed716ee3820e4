// The landing view: the server's traces (click to open), a comparison picker, and local files
// (button or drag and drop).
import type { TraceEntry } from '../io/api';
import { el } from '../ui/dom';
import { fmtBytes, fmtInt } from '../ui/format';

export function traceListView(entries: TraceEntry[] | null, listError: string | null, openFile: () => void): HTMLElement {
  const root = el('div', { class: 'trace-list' });
  root.append(el('h2', { text: 'Traces' }),
    el('p', { class: 'lead', text: 'A trace is one recorded minfer run (MINFER_TRACE=t.json minfer model.gguf "prompt"): per-node statistics, value grids, token distributions and timings. Pick one to replay it, or compare two runs of the same model and prompt.' }));
  if (listError) root.append(el('div', { class: 'error-box', text: `Could not list the server's traces: ${listError}` }));
  if (entries) {
    if (entries.length === 0) root.append(el('p', { class: 'muted', text: 'The server\'s traces directory is empty.' }));
    else {
      const t = el('table', { class: 'grid-table traces-table' },
        el('tr', {}, ...['name', 'size', 'model', 'backend', 'matmul path', 'steps', 'tokens', 'recorded at (UTC)', ''].map((h) => el('th', { text: h }))));
      for (const e of entries) {
        const a = el('a', { href: `?trace=${encodeURIComponent(e.name)}`, class: 'trace-link', text: e.name });
        t.append(el('tr', { class: e.error ? 'broken' : '' }, el('td', {}, e.error ? el('span', { text: e.name }) : a),
          el('td', { text: fmtBytes(e.size) }), el('td', { text: e.model ?? '—' }), el('td', { text: e.backend ?? '—' }),
          el('td', { text: e.matmul_path ?? '—' }), el('td', { text: e.steps === undefined ? '—' : fmtInt(e.steps) }),
          el('td', { text: e.tokens === undefined ? '—' : fmtInt(e.tokens) }), el('td', { text: e.recorded_at ?? '—' }),
          el('td', { class: 'err', text: e.error ? `cannot be read: ${e.error}` : '' })));
      }
      root.append(t);
      const ok = entries.filter((e) => !e.error);
      if (ok.length >= 2) root.append(comparePicker(ok));
    }
  }
  const open = el('button', { class: 'open-file', text: 'Open a local trace file…' });
  open.addEventListener('click', openFile);
  root.append(el('div', { class: 'drop-hint' }, open, el('span', { text: ' or drop a .json / .json.gz trace (version 1 or 2) anywhere on this page.' })));
  return root;
}

function comparePicker(entries: TraceEntry[]): HTMLElement {
  const sel = (id: string, pick: number) => {
    const s = el('select', { id });
    entries.forEach((e, i) => s.append(el('option', { value: e.name, text: `${e.name}${e.matmul_path ? ` (${e.matmul_path})` : ''}`, selected: i === pick })));
    return s;
  };
  // Default pair: two traces of the same model with different matmul paths, when there is one.
  let ia = 0, ib = 1;
  outer: for (let i = 0; i < entries.length; i++)
    for (let j = 0; j < entries.length; j++)
      if (i !== j && entries[i].model === entries[j].model && entries[i].matmul_path === 'mmq' && entries[j].matmul_path === 'f16') { ia = i; ib = j; break outer; }
  const a = sel('cmp-a', ia), b = sel('cmp-b', ib);
  const go = el('button', { class: 'compare-go', text: 'Compare' });
  go.addEventListener('click', () => { location.search = `?a=${encodeURIComponent(a.value)}&b=${encodeURIComponent(b.value)}`; });
  return el('div', { class: 'compare-picker' }, el('h3', { text: 'Compare two runs' }), el('label', { text: 'A ' }), a, el('label', { text: ' B ' }), b, go);
}
