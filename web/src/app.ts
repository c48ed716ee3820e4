// The application: loads traces (server list, local file, drag and drop, deep links), owns the
// state (step, node, metric, filters, playback) and tells the views what changed.
import { fetchComparison, fetchTrace, listTraces } from './io/api';
import { readLocalFile } from './io/read-file';
import type { Comparison } from './model/compare';
import { TraceError } from './model/errors';
import { parseTraceText } from './model/parse';
import { METRICS, metricDomain, metricInfo, metricValue, type MetricId } from './model/metrics';
import type { Trace, TraceGraph } from './model/types';
import { clear, el } from './ui/dom';
import { fmtMs, fmtNum, fmtUs } from './ui/format';
import { ComparePanel } from './views/compare-panel';
import { GraphView, type NodeStyle } from './views/graph-view';
import { Inspector } from './views/inspector';
import { nodeColorScale } from './views/node-colors';
import { TimingsPanel } from './views/timings-panel';
import { TokensPanel } from './views/tokens-panel';
import { traceListView } from './views/trace-list';

type Tab = 'tokens' | 'timings' | 'kernels' | 'compare';

export class App {
  private trace: Trace | null = null;
  private traceB: Trace | null = null;
  private cmp: Comparison | null = null;
  private step = 0;
  private node: number | null = null;
  private metric: MetricId = 'absmax';
  private backStack: number[] = [];
  private playing: number | null = null;
  private speed = 2;
  private playMode: 'steps' | 'nodes' = 'steps';
  private tab: Tab = 'tokens';
  private domains = new Map<MetricId, [number, number]>();
  lastStepMs = 0;
  lastStepParts: Record<string, number> = {};

  private graphView = new GraphView((id) => this.selectNode(id));
  private inspector = new Inspector((id) => this.selectNode(id), () => this.back());
  private tokens = new TokensPanel((i) => this.setStep(i));
  private timings = new TimingsPanel((id) => this.selectNode(id));
  private compare = new ComparePanel((s, n) => { this.setStep(s); if (n >= 0) { this.selectNode(n); this.graphView.centerOn(n); } });
  private fileInput = el('input', { type: 'file', accept: '.json,.gz,application/json,application/gzip', style: 'display:none' });

  constructor(private root: HTMLElement) {
    this.fileInput.addEventListener('change', () => { const f = this.fileInput.files?.[0]; if (f) void this.openFile(f); });
    document.body.append(this.fileInput);
    this.installDrop();
    document.addEventListener('keydown', (e) => this.onKey(e));
  }

  async start(): Promise<void> {
    const q = new URLSearchParams(location.search);
    const a = q.get('a'), b = q.get('b'), t = q.get('trace');
    try {
      if (a && b) await this.openComparison(a, b);
      else if (t) await this.openServerTrace(t);
      else await this.showList();
    } catch (e) {
      this.showError((e as Error).message);
    }
  }

  // ----- loading -------------------------------------------------------------------------

  private async showList(): Promise<void> {
    this.setBusy('loading the trace list…');
    let entries = null, err = null;
    try { entries = await listTraces(); } catch (e) { err = (e as Error).message; }
    clear(this.root);
    this.root.append(this.header(null), el('main', { class: 'landing' }, traceListView(entries, err, () => this.fileInput.click())));
    this.setReady();
  }

  private async openServerTrace(name: string): Promise<void> {
    this.setBusy(`loading ${name}…`);
    this.show(await fetchTrace(name), null, null);
  }

  private async openComparison(a: string, b: string): Promise<void> {
    this.setBusy(`loading ${a} and ${b} and their comparison…`);
    const [ta, tb, cmp] = await Promise.all([fetchTrace(a), fetchTrace(b), fetchComparison(a, b)]);
    this.show(ta, tb, cmp);
  }

  async openFile(f: File): Promise<void> {
    this.setBusy(`reading ${f.name}…`);
    try {
      const trace = parseTraceText(await readLocalFile(f), f.name);
      history.replaceState(null, '', location.pathname);
      this.show(trace, null, null);
    } catch (e) {
      // A TraceError already starts with the file name.
      this.showError(e instanceof TraceError ? e.message : `${f.name}: ${(e as Error).message}`);
    }
  }

  private installDrop(): void {
    const overlay = el('div', { class: 'drop-overlay', text: 'Drop a minfer trace (.json or .json.gz) to open it' });
    document.body.append(overlay);
    let depth = 0;
    document.addEventListener('dragenter', (e) => { e.preventDefault(); depth++; overlay.classList.add('on'); });
    document.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; overlay.classList.remove('on'); } });
    document.addEventListener('dragover', (e) => e.preventDefault());
    document.addEventListener('drop', (e) => {
      e.preventDefault(); depth = 0; overlay.classList.remove('on');
      const f = e.dataTransfer?.files?.[0];
      if (f) void this.openFile(f);
    });
  }

  // ----- the trace view ------------------------------------------------------------------

  private show(trace: Trace, traceB: Trace | null, cmp: Comparison | null): void {
    this.stop();
    this.trace = trace; this.traceB = traceB; this.cmp = cmp;
    this.domains.clear();
    this.backStack = [];
    this.node = null;
    this.step = cmp?.firstDivergent?.step ?? 0;
    this.metric = cmp ? 'error' : 'absmax';
    this.tab = cmp ? 'compare' : 'tokens';
    clear(this.root);
    const warnings = el('div', { class: 'warnings' }, ...trace.warnings.map((w) => el('div', { class: 'warning', text: w })));
    if (traceB) for (const w of traceB.warnings) warnings.append(el('div', { class: 'warning', text: `B: ${w}` }));
    const main = el('main', { class: 'trace-view' },
      el('div', { class: 'graph-pane' }, cmp ? this.compare.banner : null, this.graphView.root), this.inspector.root);
    this.root.append(this.header(trace), warnings, this.toolbar(), main, this.bottom());
    this.graphView.setGraph(this.graphOf(this.step));
    this.tokens.setTrace(trace);
    if (cmp && traceB) {
      this.compare.setComparison(trace, traceB, cmp);
      if (cmp.firstDivergent) this.graphView.mark([cmp.firstDivergent.node]);
    }
    this.inspector.empty();
    requestAnimationFrame(() => {
      this.graphView.fit(true);
      this.setStep(this.step, true);
      if (cmp?.firstDivergent) { this.selectNode(cmp.firstDivergent.node); this.graphView.centerOn(cmp.firstDivergent.node); }
      this.setReady();
      // The frame after this one shows the graph: the page-speed benchmark reads this mark.
      requestAnimationFrame(() => performance.mark('minfer:graph-painted'));
    });
  }

  private graphOf(step: number): TraceGraph {
    const s = this.trace!.steps[step];
    return s ? this.trace!.graphs.get(s.graphId)! : [...this.trace!.graphs.values()][0];
  }

  setStep(i: number, force = false): void {
    const t = this.trace;
    if (!t || t.steps.length === 0) return;
    i = Math.max(0, Math.min(t.steps.length - 1, i));
    if (i === this.step && !force) return;
    const t0 = performance.now();
    this.step = i;
    const step = t.steps[i];
    const parts: Record<string, number> = {};
    let tp = t0;
    const lap = (k: string) => { const now = performance.now(); parts[k] = now - tp; tp = now; };
    const redrawn = this.graphView.setGraph(this.graphOf(i));
    if (redrawn) this.graphView.fit(true);
    lap('graph');
    this.restyle();
    lap('restyle');
    const slider = document.getElementById('step-slider') as HTMLInputElement | null;
    if (slider) slider.value = String(i);
    const label = document.getElementById('step-label');
    if (label) label.textContent = `step ${i} / ${t.steps.length - 1} · ${step.phase} · ${step.tokens.length} token(s) in · ${fmtMs(step.timeMs)}` +
        (step.nodesSkipped ? ' · nodes not recorded in this step' : '');
    this.refreshTab();
    lap('tab');
    if (this.node !== null) this.renderInspector();
    lap('inspector');
    this.lastStepMs = performance.now() - t0;
    this.lastStepParts = parts;
    document.body.dataset.step = String(i);
  }

  private restyle(): void {
    const t = this.trace!;
    const step = t.steps[this.step];
    const info = metricInfo(this.metric);
    if (!this.domains.has(this.metric)) this.domains.set(this.metric, metricDomain(this.metric, t, this.cmp));
    const scale = nodeColorScale(info, this.domains.get(this.metric)!, this.cmp?.threshold.value ?? null);
    const styles = new Map<number, NodeStyle>();
    const g = this.graphOf(this.step);
    for (const n of g.nodes) {
      const rec = step?.records.get(n.id);
      if (n.dtype === 'i32') {   // token ids and positions are not activations: no colour
        styles.set(n.id, { fill: null, text: n.name === 'positions' ? 'positions' : 'token ids', noOutput: false });
        continue;
      }
      const v = step ? metricValue(this.metric, step, n.id, this.cmp) : null;
      styles.set(n.id, {
        fill: v === null || Number.isNaN(v) ? null : scale.fill(v),
        text: v === null ? (rec?.noOutput ? `(${rec.noOutput})` : '') : valueText(this.metric, v),
        noOutput: !!rec?.noOutput,
      });
    }
    this.graphView.restyle(styles);
    const legendKey = `${this.metric}|${this.domains.get(this.metric)!.join(',')}`;
    if (this.graphView.legendHost.dataset.key !== legendKey) {
      clear(this.graphView.legendHost);
      this.graphView.legendHost.append(scale.legend());
      this.graphView.legendHost.dataset.key = legendKey;
    }
  }

  selectNode(id: number, pushBack = true): void {
    if (!this.trace) return;
    if (pushBack && this.node !== null && this.node !== id) this.backStack.push(this.node);
    this.node = id;
    this.graphView.select(id);
    this.renderInspector();
    document.body.dataset.node = String(id);
  }

  back(): void {
    const id = this.backStack.pop();
    if (id !== undefined) { this.selectNode(id, false); this.graphView.centerOn(id); }
  }

  private renderInspector(): void {
    const t = this.trace!, step = t.steps[this.step], node = this.node!;
    const other = this.traceB && this.cmp ? {
      trace: this.traceB, step: this.traceB.steps[this.step] ?? null,
      diff: this.cmp.steps.find((s) => s.index === this.step)?.nodes.get(node) ?? null,
    } : null;
    this.inspector.render({ trace: t, step, graph: this.graphOf(this.step), node, other, canGoBack: this.backStack.length > 0 });
  }

  // ←/→ walk the executed nodes in execution order, across step boundaries in play mode.
  private moveNode(delta: number, wrapSteps = false): boolean {
    const g = this.graphOf(this.step);
    const order = g.nodes.filter((n) => n.fusedInto < 0).map((n) => n.id);
    let k = this.node === null ? (delta > 0 ? -1 : order.length) : order.indexOf(this.node);
    k += delta;
    if (k < 0 || k >= order.length) {
      if (!wrapSteps || this.step + 1 >= this.trace!.steps.length) return false;
      this.setStep(this.step + 1);
      k = 0;
    }
    this.selectNode(order[k]);
    if (!this.graphView.isCollapsed(order[k])) this.graphView.centerOn(order[k]);
    return true;
  }

  // ----- playback ------------------------------------------------------------------------

  private togglePlay(): void {
    if (this.playing !== null) { this.stop(); return; }
    const t = this.trace;
    if (!t) return;
    if (this.playMode === 'steps' && this.step >= t.steps.length - 1) this.setStep(0);
    const interval = this.playMode === 'steps' ? 1000 / this.speed : 250 / this.speed;
    this.playing = window.setInterval(() => {
      const more = this.playMode === 'steps' ? this.step < t.steps.length - 1 : true;
      if (this.playMode === 'steps' && more) this.setStep(this.step + 1);
      else if (this.playMode === 'nodes' && this.moveNode(1, true)) { /* advanced */ }
      else this.stop();
      if (this.playMode === 'steps' && this.step >= t.steps.length - 1) this.stop();
    }, interval);
    this.updatePlayButton();
  }

  private stop(): void {
    if (this.playing !== null) clearInterval(this.playing);
    this.playing = null;
    this.updatePlayButton();
  }

  private updatePlayButton(): void {
    const b = document.getElementById('play');
    if (b) { b.textContent = this.playing !== null ? '⏸ pause' : '▶ play'; b.classList.toggle('on', this.playing !== null); }
  }

  private onKey(e: KeyboardEvent): void {
    if (!this.trace) return;
    const tag = (e.target as HTMLElement).tagName;
    if (tag === 'INPUT') return;   // text fields type; the step slider moves itself
    if (tag === 'SELECT' || tag === 'TEXTAREA') return;
    const k = e.key;
    if (k === 'ArrowRight') this.moveNode(1);
    else if (k === 'ArrowLeft') this.moveNode(-1);
    else if (k === 'ArrowUp' || k === ']') this.setStep(this.step + 1);
    else if (k === 'ArrowDown' || k === '[') this.setStep(this.step - 1);
    else if (k === ' ') this.togglePlay();
    else if (k === 'Backspace') this.back();
    else if (k === '/') { document.getElementById('search')?.focus(); }
    else if (k === 'f') this.graphView.fit();
    else return;
    e.preventDefault();
  }

  // ----- chrome --------------------------------------------------------------------------

  private header(t: Trace | null): HTMLElement {
    const open = el('button', { class: 'open-file', text: 'Open file…', title: 'open a local .json / .json.gz trace (or drop one on the page)' });
    open.addEventListener('click', () => this.fileInput.click());
    const h = el('header', { class: 'app-header' }, el('a', { href: './', class: 'brand', text: 'minfer viz' }));
    if (t) {
      const m = t.meta, hp = m.hparams as Record<string, number>;
      const tok = this.trace?.timings as Record<string, number> | null;
      h.append(el('span', { class: 'trace-name', text: this.traceB ? `A: ${t.name}  ↔  B: ${this.traceB.name}` : t.name }),
        el('span', { class: 'meta', text: [
          m.modelFile || m.modelName, m.architecture && hp.n_layer ? `${m.architecture}, ${hp.n_layer} layers × ${hp.n_embd} wide` : '',
          m.backend && `${m.backend}${m.device ? ` (${m.device})` : ''}`, m.matmulPath && `matmul path ${m.matmulPath}${this.traceB ? ` vs ${this.traceB.meta.matmulPath}` : ''}`,
          `${t.steps.length} steps`, `v${t.version}`,
          tok?.prefill_tok_s ? `prefill ${fmtNum(tok.prefill_tok_s, 3)} tokens/s` : '', tok?.decode_tok_s ? `decode ${fmtNum(tok.decode_tok_s, 3)} tokens/s` : '',
        ].filter(Boolean).join(' · ') }));
    }
    h.append(el('span', { class: 'spacer' }), el('a', { href: './', class: 'nav', text: 'all traces' }), open);
    return h;
  }

  private toolbar(): HTMLElement {
    const t = this.trace!;
    const btn = (text: string, title: string, f: () => void, id?: string) => {
      const b = el('button', { text, title, id });
      b.addEventListener('click', f);
      return b;
    };
    const slider = el('input', { type: 'range', id: 'step-slider', min: 0, max: Math.max(0, t.steps.length - 1), value: this.step, title: 'decode step (↑/↓ or [ ])' });
    slider.addEventListener('input', () => this.setStep(Number(slider.value)));
    const speed = el('select', { id: 'speed', title: 'playback speed' },
      ...[0.5, 1, 2, 4, 8].map((s) => el('option', { value: s, text: `${s}×`, selected: s === this.speed })));
    speed.addEventListener('change', () => { this.speed = Number(speed.value); if (this.playing !== null) { this.stop(); this.togglePlay(); } });
    const mode = el('select', { id: 'play-mode', title: 'what play advances' },
      el('option', { value: 'steps', text: 'play steps', selected: this.playMode === 'steps' }),
      el('option', { value: 'nodes', text: 'play nodes', selected: this.playMode === 'nodes' }));
    mode.addEventListener('change', () => { this.playMode = mode.value as 'steps' | 'nodes'; if (this.playing !== null) { this.stop(); this.togglePlay(); } });
    const metric = el('select', { id: 'metric', title: 'what the node colour shows' },
      ...METRICS.filter((m) => m.id !== 'error' || this.cmp).map((m) => el('option', { value: m.id, text: `colour: ${m.label}`, selected: m.id === this.metric })));
    metric.addEventListener('change', () => { this.metric = metric.value as MetricId; this.restyle(); });
    const filters = { attention: true, ffn: true, kv: true };
    const check = (key: keyof typeof filters, label: string) => {
      const c = el('input', { type: 'checkbox', checked: true, id: `filter-${key}` });
      c.addEventListener('change', () => { filters[key] = c.checked; this.graphView.setFilters({ ...filters }); });
      return el('label', { class: 'check', title: `show the ${label} nodes (unchecked: dimmed)` }, c, label);
    };
    const search = el('input', { type: 'search', id: 'search', placeholder: 'search node name (/)', title: 'Enter jumps to the first match' });
    const hits = el('span', { class: 'search-hits' });
    let matches: number[] = [], mi = 0;
    search.addEventListener('input', () => { matches = this.graphView.search(search.value); mi = 0; hits.textContent = search.value ? `${matches.length} match(es)` : ''; });
    search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && matches.length) { const id = matches[mi++ % matches.length]; this.selectNode(id); this.graphView.centerOn(id); }
      if (e.key === 'Escape') { search.value = ''; matches = this.graphView.search(''); hits.textContent = ''; search.blur(); }
    });
    return el('div', { class: 'toolbar' },
      el('div', { class: 'group' },
        btn('« first', 'first step', () => this.setStep(0)), btn('‹ prev', 'previous step (↓ or [)', () => this.setStep(this.step - 1)),
        btn('▶ play', 'play / pause (space)', () => this.togglePlay(), 'play'),
        btn('next ›', 'next step (↑ or ])', () => this.setStep(this.step + 1), 'next-step'), btn('last »', 'last step', () => this.setStep(t.steps.length - 1)),
        speed, mode),
      el('div', { class: 'group grow' }, slider, el('span', { id: 'step-label', class: 'step-label' })),
      el('div', { class: 'group' }, metric, check('attention', 'attention'), check('ffn', 'FFN'), check('kv', 'KV'), search, hits),
      el('div', { class: 'group' }, btn('fit', 'fit the whole graph (f)', () => this.graphView.fit()), btn('fit width', 'fit the graph width', () => this.graphView.fit(true)),
        btn('collapse layers', 'collapse every layer to a strip', () => this.graphView.setAllCollapsed(true)),
        btn('expand layers', 'expand every layer', () => this.graphView.setAllCollapsed(false))),
      el('div', { class: 'keys', text: 'keys: ←/→ node · ↑/↓ or [ ] step · space play · Backspace back · / search · f fit' }));
  }

  private bottom(): HTMLElement {
    const tabs: [Tab, string][] = [['tokens', 'Tokens & top-k'], ['timings', 'Timings'], ['kernels', 'Timeline']];
    if (this.cmp) tabs.unshift(['compare', 'Comparison']);
    const bar = el('div', { class: 'tabs' });
    const body = el('div', { class: 'tab-body', id: 'tab-body' });
    for (const [id, label] of tabs) {
      const b = el('button', { class: `tab${id === this.tab ? ' on' : ''}`, 'data-tab': id, text: label });
      b.addEventListener('click', () => {
        this.tab = id;
        bar.querySelectorAll('.tab').forEach((x) => x.classList.toggle('on', (x as HTMLElement).dataset.tab === id));
        this.refreshTab();
      });
      bar.append(b);
    }
    return el('section', { class: 'bottom' }, bar, body);
  }

  private refreshTab(): void {
    const body = document.getElementById('tab-body');
    if (!body || !this.trace) return;
    const want = this.tab === 'tokens' ? this.tokens.root : this.tab === 'timings' ? this.timings.root : this.tab === 'kernels' ? this.timings.kernelsRoot : this.compare.root;
    if (body.firstChild !== want) { clear(body); body.append(want); }
    const step = this.trace.steps[this.step];
    if (!step) return;
    if (this.tab === 'timings' || this.tab === 'kernels') this.timings.update(this.trace, step);
    if (this.tab === 'compare' && this.cmp && this.traceB) this.compare.update(this.trace, this.traceB, this.cmp, this.step);
    if (this.tab === 'tokens') this.tokens.update(this.trace, this.step);
  }

  // ----- status --------------------------------------------------------------------------

  private setBusy(text: string): void {
    document.body.dataset.state = 'loading';
    clear(this.root);
    this.root.append(this.header(null), el('div', { class: 'busy', text }));
  }

  private setReady(): void {
    document.body.dataset.state = 'ready';
  }

  showError(message: string): void {
    document.body.dataset.state = 'error';
    clear(this.root);
    const box = el('div', { class: 'error-box', role: 'alert' }, el('strong', { text: 'Cannot show this trace. ' }), el('span', { class: 'error-message', text: message }));
    const open = el('button', { text: 'Open another file…' });
    open.addEventListener('click', () => this.fileInput.click());
    this.root.append(this.header(null), el('main', { class: 'landing' }, box, el('p', {}, el('a', { href: './', text: '← back to the trace list' }), ' ', open)));
  }

  // Hooks for the e2e tests and the page-speed benchmark.
  debugApi() {
    return {
      setStep: (i: number) => this.setStep(i),
      selectNode: (id: number) => this.selectNode(id),
      lastStepMs: () => this.lastStepMs,
      lastStepParts: () => this.lastStepParts,
      steps: () => this.trace?.steps.length ?? 0,
      nodeCount: () => this.graphView.nodeCount,
      findNode: (name: string) => this.graphOf(this.step).nodes.find((n) => n.name === name)?.id ?? -1,
    };
  }
}

function valueText(m: MetricId, v: number): string {
  if (m === 'time') return fmtUs(v);
  if (m === 'error') return Number.isFinite(v) ? `${v.toFixed(1)} dB` : '∞ dB';
  if (m === 'nonfinite') return v > 0 ? `${v} NaN/Inf` : 'finite';
  return `${m === 'absmax' ? 'max|x|' : 'mean|x|'} ${fmtNum(v, 3)}`;
}
