// The toolbar: playback (buttons, speed, mode, step slider), colour metric, filters, search and
// graph view controls. It holds no state of its own beyond the widgets; the app is told.
import { METRICS, type MetricId } from '../model/metrics';
import { el } from '../ui/dom';
import type { Filters } from './graph-view';

export interface ToolbarState {
  steps: number; step: number; speed: number; playMode: 'steps' | 'nodes'; metric: MetricId; comparing: boolean;
  gpu: boolean;             // the trace has GPU kernel timings: offer the GPU time and roofline colours
  view: 'ops' | 'pipeline';
}

export interface ToolbarActions {
  setStep(i: number): void;
  setView(v: 'ops' | 'pipeline'): void;
  stepBy(delta: number): void;
  togglePlay(): void;
  setSpeed(s: number): void;
  setPlayMode(m: 'steps' | 'nodes'): void;
  setMetric(m: MetricId): void;
  setFilters(f: Filters): void;
  search(q: string): number[];        // matching node ids in execution order
  goToNode(id: number): void;
  fit(widthOnly: boolean): void;
  collapseAll(collapse: boolean): void;
}

export function toolbar(s: ToolbarState, a: ToolbarActions): HTMLElement {
  const btn = (text: string, title: string, f: () => void, id?: string) => {
    const b = el('button', { text, title, id });
    b.addEventListener('click', f);
    return b;
  };
  const slider = el('input', { type: 'range', id: 'step-slider', min: 0, max: Math.max(0, s.steps - 1), value: s.step, title: 'decode step (↑/↓ or [ ])' });
  slider.addEventListener('input', () => a.setStep(Number(slider.value)));
  const speed = el('select', { id: 'speed', title: 'playback speed (steps per second, or 4 nodes per second × speed)' },
    ...[0.5, 1, 2, 4, 8].map((x) => el('option', { value: x, text: `${x}×`, selected: x === s.speed })));
  speed.addEventListener('change', () => a.setSpeed(Number(speed.value)));
  const mode = el('select', { id: 'play-mode', title: 'what play advances' },
    el('option', { value: 'steps', text: 'play steps', selected: s.playMode === 'steps' }),
    el('option', { value: 'nodes', text: 'play nodes', selected: s.playMode === 'nodes' }));
  mode.addEventListener('change', () => a.setPlayMode(mode.value as 'steps' | 'nodes'));
  const metric = el('select', { id: 'metric', title: 'what the node colour shows' },
    ...METRICS.filter((m) => (!m.comparison || s.comparing) && ((m.id !== 'gpu' && m.id !== 'roof') || s.gpu)).map((m) => el('option', { value: m.id, text: `colour: ${m.label}`, selected: m.id === s.metric })));
  metric.addEventListener('change', () => a.setMetric(metric.value as MetricId));
  const filters: Filters = { attention: true, ffn: true, kv: true };
  const check = (key: keyof Filters, label: string) => {
    const c = el('input', { type: 'checkbox', checked: true, id: `filter-${key}` });
    c.addEventListener('change', () => { filters[key] = c.checked; a.setFilters({ ...filters }); });
    return el('label', { class: 'check', title: `show the ${label} nodes (unchecked: dimmed)` }, c, label);
  };
  const search = el('input', { type: 'search', id: 'search', placeholder: 'search name or op (/)', title: 'matches node names, ops (e.g. matmul) and weight types (e.g. q8_0); Enter jumps to the next match' });
  const hits = el('span', { class: 'search-hits' });
  let matches: number[] = [], next = 0;
  search.addEventListener('input', () => { matches = a.search(search.value); next = 0; hits.textContent = search.value ? `${matches.length} match(es)` : ''; });
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && matches.length) a.goToNode(matches[next++ % matches.length]);
    if (e.key === 'Escape') { search.value = ''; matches = a.search(''); hits.textContent = ''; search.blur(); }
  });
  const viewBtn = (v: 'ops' | 'pipeline', label: string, title: string) => {
    const b = el('button', { class: `view-btn${s.view === v ? ' on' : ''}`, id: `view-${v}`, 'data-view': v, text: label, title });
    b.addEventListener('click', () => {
      b.parentElement?.querySelectorAll('.view-btn').forEach((x) => x.classList.toggle('on', x === b));
      a.setView(v);
    });
    return b;
  };
  return el('div', { class: 'toolbar' },
    el('div', { class: 'group segmented' }, viewBtn('ops', 'Operators', 'the operator graph: one box per node (p toggles)'),
      viewBtn('pipeline', 'Pipeline', 'the semantic pipeline: one box per stage, layers as rows (p toggles)')),
    el('div', { class: 'group' },
      btn('« first', 'first step', () => a.setStep(0)), btn('‹ prev', 'previous step (↓ or [)', () => a.stepBy(-1)),
      btn('▶ play', 'play / pause (space)', () => a.togglePlay(), 'play'),
      btn('next ›', 'next step (↑ or ])', () => a.stepBy(1), 'next-step'), btn('last »', 'last step', () => a.setStep(s.steps - 1)),
      speed, mode),
    el('div', { class: 'group grow' }, slider, el('span', { id: 'step-label', class: 'step-label' })),
    el('div', { class: 'group' }, metric, check('attention', 'attention'), check('ffn', 'FFN'), check('kv', 'KV'), search, hits),
    el('div', { class: 'group' }, btn('fit', 'fit the whole graph (f)', () => a.fit(false)), btn('fit width', 'fit the graph width', () => a.fit(true)),
      btn('collapse layers', 'collapse every layer to a strip', () => a.collapseAll(true)),
      btn('expand layers', 'expand every layer', () => a.collapseAll(false))),
    el('div', { class: 'keys', text: 'keys: ←/→ node · ↑/↓ or [ ] step · space play · Backspace back · / search · f fit · p pipeline / operators' }));
}
