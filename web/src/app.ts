// The application: loads traces (server list, local file, drag and drop, deep links), owns the
// state (step, node, metric, filters, playback) and tells the views what changed.
import { fetchComparison, fetchTrace, listTraces } from './io/api';
import { readLocalFile } from './io/read-file';
import type { Comparison } from './model/compare';
import { TraceError } from './model/errors';
import { parseTraceText } from './model/parse';
import { metricDomain, metricInfo, metricValue, type MetricId } from './model/metrics';
import type { Trace, TraceGraph } from './model/types';
import { clear, el } from './ui/dom';
import { fmtMs, fmtNum, fmtUs } from './ui/format';
import { ComparePanel } from './views/compare-panel';
import { GraphView, type NodeStyle } from './views/graph-view';
import { Inspector } from './views/inspector';
import { nodeColorScale } from './views/node-colors';
import { TimingsPanel } from './views/timings-panel';
import { header } from './views/header';
import { toolbar } from './views/toolbar';
import { Player } from './playback';
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
  private speed = 2;
  private playMode: 'steps' | 'nodes' = 'steps';
  private tab: Tab = 'tokens';
  private domains = new Map<MetricId, [number, number]>();
  lastStepMs = 0;
  lastStepParts: Record<string, number> = {};

  private player = new Player((on) => this.updatePlayButton(on));
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
    this.root.append(header(null, null, () => this.fileInput.click()), el('main', { class: 'landing' }, traceListView(entries, err, () => this.fileInput.click())));
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
    this.player.stop();
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
    this.root.append(header(trace, traceB, () => this.fileInput.click()), warnings, this.toolbar(), main, this.bottom());
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
    if (this.player.playing) { this.player.stop(); return; }
    const t = this.trace;
    if (!t) return;
    if (this.playMode === 'steps') {
      if (this.step >= t.steps.length - 1) this.setStep(0);
      this.player.start(1000 / this.speed, () => { this.setStep(this.step + 1); return this.step < t.steps.length - 1; });
    } else {
      this.player.start(250 / this.speed, () => this.moveNode(1, true));
    }
  }

  private restartPlay(): void {
    if (this.player.playing) { this.player.stop(); this.togglePlay(); }
  }

  private updatePlayButton(playing: boolean): void {
    const b = document.getElementById('play');
    if (b) { b.textContent = playing ? '⏸ pause' : '▶ play'; b.classList.toggle('on', playing); }
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



  private toolbar(): HTMLElement {
    return toolbar(
      { steps: this.trace!.steps.length, step: this.step, speed: this.speed, playMode: this.playMode, metric: this.metric, comparing: !!this.cmp },
      {
        setStep: (i) => this.setStep(i),
        stepBy: (d) => this.setStep(this.step + d),
        togglePlay: () => this.togglePlay(),
        setSpeed: (x) => { this.speed = x; this.restartPlay(); },
        setPlayMode: (m) => { this.playMode = m; this.restartPlay(); },
        setMetric: (m) => { this.metric = m; this.restyle(); },
        setFilters: (f) => this.graphView.setFilters(f),
        search: (q) => this.graphView.search(q),
        goToNode: (id) => { this.selectNode(id); this.graphView.centerOn(id); },
        fit: (w) => this.graphView.fit(w),
        collapseAll: (c) => this.graphView.setAllCollapsed(c),
      });
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
    this.root.append(header(null, null, () => this.fileInput.click()), el('div', { class: 'busy', text }));
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
    this.root.append(header(null, null, () => this.fileInput.click()), el('main', { class: 'landing' }, box, el('p', {}, el('a', { href: './', text: '← back to the trace list' }), ' ', open)));
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
