// The landing view: the server's traces (click to open), a comparison picker, and local files
// (button or drag and drop).
import type { TraceEntry } from '../io/api';
import { defaultPair, noPairReason, pairProblem } from '../model/pairing';
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
        el('tr', {}, ...['name', 'size', 'model', 'family', 'backend', 'matmul path', 'steps', 'tokens', 'recorded at (UTC)', ''].map((h) => el('th', { text: h }))));
      for (const e of entries) {
        const a = el('a', { href: `?trace=${encodeURIComponent(e.name)}`, class: 'trace-link', text: e.name });
        t.append(el('tr', { class: e.error ? 'broken' : '' }, el('td', {}, e.error ? el('span', { text: e.name }) : a),
          el('td', { text: fmtBytes(e.size) }), el('td', { text: e.model ?? '—' }), el('td', { class: 'family', text: e.architecture || '—' }), el('td', { text: e.backend ?? '—' }),
          el('td', { text: e.compare_path ? `${e.matmul_path} vs ${e.compare_path} (paired)` : e.matmul_path ?? '—' }), el('td', { text: e.steps === undefined ? '—' : fmtInt(e.steps) }),
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
  root.append(el('div', { class: 'drop-hint' }, open, el('span', { text: ' or drop a .json / .json.gz trace (version 1, 2 or 3) anywhere on this page.' })));
  return root;
}

function comparePicker(entries: TraceEntry[]): HTMLElement {
  const pick = defaultPair(entries);
  const sel = (id: string, at: number) => {
    const s = el('select', { id });
    entries.forEach((e, i) => s.append(el('option', { value: e.name, text: `${e.name}${e.matmul_path ? ` (${e.matmul_path})` : ''}`, selected: i === at })));
    return s;
  };
  const a = sel('cmp-a', pick ? pick[0] : 0), b = sel('cmp-b', pick ? pick[1] : 1);
  const go = el('button', { class: 'compare-go', text: 'Compare' });
  const why = el('div', { class: 'compare-why' });
  // Only a pair of the same model and prompt can be compared: say why before the server refuses.
  const check = () => {
    const ea = entries[a.selectedIndex], eb = entries[b.selectedIndex];
    const problem = ea && eb ? pairProblem(ea, eb) : 'pick two traces';
    (go as HTMLButtonElement).disabled = problem !== null;
    why.textContent = problem ? `Cannot compare: ${problem}.` : ea === eb ? 'The same trace on both sides: the comparison will say "identical".' : '';
    why.classList.toggle('bad', problem !== null);
  };
  a.addEventListener('change', check);
  b.addEventListener('change', check);
  check();
  if (!pick) why.textContent = `${noPairReason(entries)} ${why.textContent}`;
  go.addEventListener('click', () => { location.search = `?a=${encodeURIComponent(a.value)}&b=${encodeURIComponent(b.value)}`; });
  const paired = entries.filter((e) => e.compare_path);
  return el('div', { class: 'compare-picker' }, el('h3', { text: 'Compare two runs' }),
    el('p', { class: 'muted', text: 'Two traces of the same model and prompt. SQNR is measured against the float path (f16/f32) by default; the comparison page can switch the reference.' }),
    el('label', { text: 'A ' }), a, el('label', { text: ' B ' }), b, go, why,
    paired.length ? el('p', { class: 'paired-hint' }, 'Paired traces (both paths recorded in lockstep on the same tokens, full-tensor metrics) open as a comparison by themselves: ',
      ...paired.flatMap((e, i) => [i ? ', ' : '', el('a', { href: `?trace=${encodeURIComponent(e.name)}`, class: 'paired-link', text: `${e.name} (${e.matmul_path} vs ${e.compare_path})` })])) : null);
}
