// The application: opens traces (server list, local file, drag and drop, deep links; loading
// is io/trace-loader.ts, live runs page/live-run.ts) and tells the views what changed. What is
// shown (trace, step, node, metric, view, …) lives in a store (state/selection.ts); the views
// here redraw when it changes (onChange).
import { serverApi, TraceLoader } from './io/trace-loader';
import { isPaired } from './model/paired';
import { traceHasKernels } from './model/gpu-time';
import { findNodeByKey } from './model/graph-index';
import type { Trace } from './model/types';
import { clear, el } from './ui/dom';
import { fmtMs } from './ui/format';
import { ComparePanel } from './views/compare-panel';
import { GraphView } from './views/graph-view';
import { Inspector } from './views/inspector';
import { NodeColouring } from './views/node-styles';
import { TimingsPanel } from './views/timings-panel';
import { RooflinePanel } from './views/roofline-panel';
import { header } from './views/header';
import { toolbar } from './views/toolbar';
import { Playback } from './playback';
import { bindKeys } from './page/keyboard';
import { localFiles } from './page/file-drop';
import { TokensPanel } from './views/tokens-panel';
import { PipelineView, stageDetails } from './views/pipeline-view';
import { traceListView } from './views/trace-list';
import { bottomSplitter } from './ui/splitter';
import { readUrl, type UrlState } from './url-state';
import { runPanel } from './views/run-panel';
import { firstDivergence, graphOf, openingSelection, selectionStore, type Loaded, type Selection, type Tab } from './state/selection';
import { back, moveNode, redrawStep, selectNode, setStep } from './state/navigation';
import { syncUrl } from './page/url-sync';
import { LiveRunController } from './page/live-run';

export class App {
  private store = selectionStore();
  private colouring = new NodeColouring();
  lastStepMs = 0;
  private allLoaded = true;
  lastStepParts: Record<string, number> = {};

  private playback = new Playback(this.store, () => this.moveNode(1, true), (on) => this.updatePlayButton(on));
  private graphView = new GraphView((id) => selectNode(this.store, id));
  private inspector = new Inspector((id) => selectNode(this.store, id), () => this.back());
  private tokens = new TokensPanel((i) => setStep(this.store, i));
  private tokensB = new TokensPanel((i) => setStep(this.store, i));
  private timings = new TimingsPanel((id) => this.goToNode(id), (i) => setStep(this.store, i));
  private timingsB = new TimingsPanel((id) => this.goToNode(id), (i) => setStep(this.store, i));
  private roofline = new RooflinePanel((id) => this.goToNode(id));
  private initial: UrlState | null = null;
  private loader = new TraceLoader(serverApi, (text) => this.setBusy(text));
  private pipeline = new PipelineView((s) => this.store.set({ stage: s }, { force: true }));
  private compare = new ComparePanel((s, n) => { setStep(this.store, s); if (n >= 0) this.goToNode(n); },
    (ref) => { void this.setReference(ref).catch((e) => this.showError((e as Error).message)); });

  private pickFile: () => void;

  constructor(private root: HTMLElement) {
    this.pickFile = localFiles((f) => void this.openFile(f));
    bindKeys(document, () => !!this.s.trace, {
      moveNode: (d) => this.moveNode(d),
      stepBy: (d) => setStep(this.store, this.s.step + d),
      togglePlay: () => this.playback.toggle(),
      back: () => this.back(),
      focusSearch: () => document.getElementById('search')?.focus(),
      fit: () => this.graphView.fit(),
      toggleView: () => this.store.set({ view: this.s.view === 'ops' ? 'pipeline' : 'ops' }),
    });
    this.store.subscribe(null, (s, changed) => this.onChange(s, changed));
    syncUrl(this.store);
  }

  private get s(): Readonly<Selection> {
    return this.store.get();
  }

  async start(): Promise<void> {
    const u = readUrl(location.search);
    this.initial = u;
    const { a, b, trace: t } = u;
    try {
      const live = new URLSearchParams(location.search).get('live');
      if (live && /^\d+$/.test(live)) this.live.attach(Number(live));
      else if (a && b) await this.openComparison(a, b);
      else if (t) await this.openServerTrace(t);
      else await this.showList();
    } catch (e) {
      this.showError((e as Error).message);
    }
  }

  // ----- loading -------------------------------------------------------------------------

  private async showList(): Promise<void> {
    this.live.close();
    const { entries, listError, live } = await this.loader.landing();
    clear(this.root);
    this.root.append(header(null, null, this.pickFile), el('main', { class: 'landing' },
      live && live.models.length ? runPanel(live, (r) => this.live.start(r)) : null,
      traceListView(entries, listError, this.pickFile)));
    this.setReady();
  }

  // ----- live runs: page/live-run.ts, told what to redraw here ------------------------------

  private live = new LiveRunController(this.store, {
    busy: (text) => this.setBusy(text),
    show: (l, banner) => this.show(l, banner),
    stepsGrew: (count) => {
      const slider = document.getElementById('step-slider') as HTMLInputElement | null;
      if (slider) slider.max = String(count - 1);
    },
    tokensChanged: (trace) => {
      this.tokens.setTrace(trace);
      if (this.s.step === trace.steps.length - 1) this.refreshTab();
    },
    recolour: (clearRanges, mark) => {
      if (clearRanges) this.colouring.clear();
      if (mark) this.graphView.mark(mark);
      this.restyle();
    },
  });

  private async openServerTrace(name: string): Promise<void> {
    this.live.close();
    const { loaded, rest } = await this.loader.server(name, this.initial?.step ?? 0);
    if (!isPaired(loaded.trace)) this.allLoaded = !rest;
    this.show(loaded);
    if (!rest) return;
    const trace = loaded.trace;
    void rest((k) => {
      if (this.s.trace !== trace) return;
      if (k === this.s.step) { this.restyle(); this.deferDetails(); }
    }).then(() => {
      if (this.s.trace !== trace) return;
      this.allLoaded = true;
      this.colouring.clear();       // colour ranges are over all steps: now they are all here
      this.restyle();
      this.tokens.setTrace(trace);
      this.refreshTab();
    }).catch((e) => this.showError((e as Error).message));
  }

  private async openComparison(a: string, b: string): Promise<void> {
    this.show(await this.loader.comparison(a, b));
  }

  // The server measures against its first trace, so B as reference asks it for (b, a).
  private async setReference(ref: 'a' | 'b'): Promise<void> {
    if (!this.s.trace || !this.s.traceB) return;
    const cmp = await this.loader.reference(this.s.source, ref);
    if (cmp) this.store.set({ cmp });
  }

  async openFile(f: File): Promise<void> {
    this.live.close();
    try {
      const loaded = await this.loader.file(f);
      history.replaceState(null, '', location.pathname);
      this.initial = null;
      this.show(loaded);
    } catch (e) {
      this.showError((e as Error).message);
    }
  }

  // ----- the trace view ------------------------------------------------------------------

  // Version-1 top-k entries have no text: the loader asks the server's copy of the model.
  private async fillVocabulary(trace: Trace): Promise<void> {
    if (!await this.loader.vocabulary(trace, () => this.s.trace === trace)) return;
    this.tokens.setTrace(trace);
    this.refreshTab();
    if (!trace.warnings.some((w) => /shown as #id/.test(w))) document.querySelectorAll('.warnings .warning').forEach((w) => { if (/shown as #id/.test(w.textContent ?? '')) w.remove(); });
  }

  // A newly loaded trace: the whole selection is set, then the page is laid out for it.
  private show(l: Loaded, banner: HTMLElement | null = null): void {
    const { trace, traceB, cmp } = l;
    this.playback.stop();
    this.colouring.clear();
    this.timings.selectNode(null);
    this.roofline.select(null);
    this.timingsB.selectNode(null);
    const first = firstDivergence(cmp);   // the node that first adds error
    const want = this.initial;
    this.initial = null;
    this.store.set(openingSelection(l, want, this.s.view), { force: true });
    clear(this.root);
    const warnings = el('div', { class: 'warnings' }, ...trace.warnings.map((w) => el('div', { class: 'warning', text: w })));
    if (traceB) for (const w of traceB.warnings) warnings.append(el('div', { class: 'warning', text: `B: ${w}` }));
    const main = el('main', { class: 'trace-view' },
      el('div', { class: 'graph-pane' }, cmp ? this.compare.banner : banner, this.graphView.legendHost, this.graphView.root, this.pipeline.root), this.inspector.root);
    this.applyView();
    const bottom = this.bottom();
    const splitter = bottomSplitter(bottom, () => this.graphView.cull());
    this.root.append(header(trace, traceB, this.pickFile), warnings, this.toolbar(), main, splitter, bottom);
    this.graphView.setGraph(graphOf(this.s));
    this.tokens.setTrace(trace);
    if (traceB) this.tokensB.setTrace(traceB);
    if (trace.version === 1) void this.fillVocabulary(trace);
    if (cmp && traceB) {
      this.compare.setComparison(trace, traceB, cmp);
      if (first) this.graphView.mark([first.node]);
    }
    this.inspector.empty();
    requestAnimationFrame(() => {
      this.graphView.fit(true);
      redrawStep(this.store, this.s.step);
      if (first) this.goToNode(first.node);
      const id = want?.node ? findNodeByKey(graphOf(this.s), want.node) : -1;
      if (id >= 0) this.goToNode(id);
      this.setReady();
      // The frame after this one shows the graph: the page-speed benchmark reads this mark.
      requestAnimationFrame(() => performance.mark('minfer:graph-painted'));
    });
  }

  // What each change of the selection redraws. A new trace is laid out by show() itself.
  private onChange(s: Readonly<Selection>, changed: ReadonlySet<keyof Selection>): void {
    if (changed.has('trace') || !s.trace) return;
    if (changed.has('cmp')) this.referenceChanged();
    if (changed.has('view')) this.viewChanged();
    if (changed.has('step')) this.stepChanged();
    if (changed.has('metric')) this.restyle();
    if (changed.has('node') && s.node !== null) this.nodeChanged();
    if (changed.has('stage') && s.stage) this.renderStage();
    if (changed.has('tab')) this.tabChanged();
  }

  private referenceChanged(): void {
    this.colouring.clear();
    this.compare.setComparison(this.s.trace!, this.s.traceB!, this.s.cmp!);
    this.restyle();
    this.refreshTab();
    if (this.s.node !== null) this.renderInspector();
  }

  private stepChanged(): void {
    const t = this.s.trace!, i = this.s.step;
    const t0 = performance.now();
    const step = t.steps[i];
    const parts: Record<string, number> = {};
    let tp = t0;
    const lap = (k: string) => { const now = performance.now(); parts[k] = now - tp; tp = now; };
    const redrawn = this.graphView.setGraph(graphOf(this.s));
    if (redrawn) this.graphView.fit(true);
    this.pipeline.setGraph(graphOf(this.s));
    lap('graph');
    this.restyle();
    lap('restyle');
    const slider = document.getElementById('step-slider') as HTMLInputElement | null;
    if (slider) slider.value = String(i);
    const label = document.getElementById('step-label');
    if (label) label.textContent = `step ${i} / ${t.steps.length - 1} · ${step.phase} · ${step.tokens.length} token(s) in · ${fmtMs(step.timeMs)}` +
        (step.nodesSkipped ? ' · nodes not recorded in this step' : '');
    // The graph (or pipeline) changes in this frame; the inspector and the bottom tab follow in
    // the next two frames, so no frame does all the work (a held arrow key stays smooth).
    this.deferDetails();
    this.lastStepMs = performance.now() - t0;
    this.lastStepParts = parts;
    document.body.dataset.step = String(i);
  }

  private restyle(): void {
    const t = this.s.trace!;
    const { styles, legendKey, legend } = this.colouring.paint(t, this.s.step, graphOf(this.s), this.s.metric, this.s.cmp);
    if (this.s.view === 'ops') this.graphView.restyle(styles);
    else this.pipeline.update(t.steps[this.s.step], styles);
    if (this.graphView.legendHost.dataset.key !== legendKey) {
      clear(this.graphView.legendHost);
      this.graphView.legendHost.append(legend());
      this.graphView.legendHost.dataset.key = legendKey;
    }
  }

  private nodeChanged(): void {
    const id = this.s.node!;
    this.graphView.select(id);
    this.timings.selectNode(id);
    this.timingsB.selectNode(id);
    this.roofline.select(id);
    this.renderInspector();
    document.body.dataset.node = String(id);
  }

  private goToNode(id: number): void {
    selectNode(this.store, id);
    this.graphView.centerOn(id);
  }

  private detailsFrame = 0;
  lastDetailsMs = 0;

  private deferDetails(): void {
    cancelAnimationFrame(this.detailsFrame);
    const stepAt = this.s.step;
    this.detailsFrame = requestAnimationFrame(() => {
      const t0 = performance.now();
      if (this.s.view === 'pipeline' && this.s.stage) this.renderStage();
      else if (this.s.node !== null) this.renderInspector();
      const t1 = performance.now();
      this.detailsFrame = requestAnimationFrame(() => {
        const t2 = performance.now();
        if (this.s.step === stepAt) this.refreshTab();
        this.lastDetailsMs = t1 - t0 + performance.now() - t2;
        document.body.dataset.detailsStep = String(stepAt);
      });
    });
  }

  // ----- operators / pipeline ------------------------------------------------------------

  private viewChanged(): void {
    const v = this.s.view;
    this.applyView();
    document.querySelectorAll('.view-btn').forEach((b) => b.classList.toggle('on', (b as HTMLElement).dataset.view === v));
    this.restyle();
    if (v === 'ops') { this.graphView.cull(); if (this.s.node !== null) this.renderInspector(); }
  }

  private applyView(): void {
    this.graphView.root.style.display = this.s.view === 'ops' ? '' : 'none';
    this.pipeline.root.style.display = this.s.view === 'pipeline' ? '' : 'none';
    if (this.s.trace) this.pipeline.setGraph(graphOf(this.s));
    document.body.dataset.view = this.s.view;
  }

  private renderStage(): void {
    const g = graphOf(this.s), s = this.s.stage!;
    // The same stage in this step's graph (prefill and decode graphs differ in shapes only).
    const cur = this.pipeline.stages ? [...this.pipeline.stages.byNode.values(), ...this.pipeline.stages.tail].find((x) => x.key === s.key) ?? s : s;
    this.inspector.custom(stageDetails(g, cur, this.s.trace!.steps[this.s.step], (id) => {
      this.store.set({ view: 'ops' });
      this.goToNode(id);
    }));
  }

  private back(): void {
    const id = back(this.store);
    if (id !== null) this.graphView.centerOn(id);
  }

  private renderInspector(): void {
    const { trace: t, traceB, cmp, step: i, node } = this.s;
    const other = traceB && cmp ? {
      trace: traceB, step: traceB.steps[i] ?? null,
      diff: cmp.steps.find((s) => s.index === i)?.nodes.get(node!) ?? null,
      source: cmp.metricsSource, refIsA: cmp.reference === 'a',
    } : null;
    this.inspector.render({ trace: t!, step: t!.steps[i], graph: graphOf(this.s), node: node!, other, canGoBack: this.s.backStack.length > 0 });
  }

  // ←/→ walk the executed nodes in execution order, across step boundaries in play mode.
  private moveNode(delta: number, wrapSteps = false): boolean {
    const id = moveNode(this.store, delta, wrapSteps);
    if (id === null) return false;
    if (!this.graphView.isCollapsed(id)) this.graphView.centerOn(id);
    return true;
  }

  // ----- playback ------------------------------------------------------------------------

  private updatePlayButton(playing: boolean): void {
    const b = document.getElementById('play');
    if (b) { b.textContent = playing ? '⏸ pause' : '▶ play'; b.classList.toggle('on', playing); }
  }

  // ----- chrome --------------------------------------------------------------------------

  private toolbar(): HTMLElement {
    const s = this.s;
    return toolbar(
      { steps: s.trace!.steps.length, step: s.step, speed: s.speed, playMode: s.playMode, metric: s.metric, comparing: !!s.cmp, view: s.view, gpu: traceHasKernels(s.trace!) },
      {
        setStep: (i) => setStep(this.store, i),
        setView: (v) => this.store.set({ view: v }),
        stepBy: (d) => setStep(this.store, this.s.step + d),
        togglePlay: () => this.playback.toggle(),
        setSpeed: (x) => this.store.set({ speed: x }),
        setPlayMode: (m) => this.store.set({ playMode: m }),
        setMetric: (m) => this.store.set({ metric: m }, { force: true }),
        setFilters: (f) => this.graphView.setFilters(f),
        search: (q) => this.graphView.search(q),
        goToNode: (id) => this.goToNode(id),
        fit: (w) => this.graphView.fit(w),
        collapseAll: (c) => this.graphView.setAllCollapsed(c),
      });
  }

  private bottom(): HTMLElement {
    const tabs: [Tab, string][] = [['tokens', 'Tokens & top-k'], ['timings', 'Timings'], ['kernels', 'Timeline']];
    if (traceHasKernels(this.s.trace!)) tabs.push(['roofline', 'Roofline']);
    if (this.s.cmp) tabs.unshift(['compare', 'Comparison']);
    const bar = el('div', { class: 'tabs' });
    const body = el('div', { class: 'tab-body', id: 'tab-body' });
    for (const [id, label] of tabs) {
      const b = el('button', { class: `tab${id === this.s.tab ? ' on' : ''}`, 'data-tab': id, text: label });
      b.addEventListener('click', () => this.store.set({ tab: id }, { force: true }));
      bar.append(b);
    }
    return el('section', { class: 'bottom' }, bar, body);
  }

  private tabChanged(): void {
    document.querySelectorAll('.tabs .tab').forEach((x) => x.classList.toggle('on', (x as HTMLElement).dataset.tab === this.s.tab));
    this.refreshTab();
  }

  private refreshTab(): void {
    const body = document.getElementById('tab-body');
    const { trace: t, traceB: b, tab, step: i, cmp } = this.s;
    if (!body || !t) return;
    // In comparison mode the tokens, timings and timeline tabs show A above B.
    const pick = (which: 'A' | 'B'): HTMLElement => {
      const tok = which === 'A' ? this.tokens : this.tokensB, tim = which === 'A' ? this.timings : this.timingsB;
      return tab === 'tokens' ? tok.root : tab === 'timings' ? tim.root : tim.kernelsRoot;
    };
    const want: HTMLElement[] = tab === 'compare' ? [this.compare.root] : tab === 'roofline' ? [this.roofline.root]
      : b ? [pick('A'), pick('B')] : [pick('A')];
    const key = `${tab}|${b ? 2 : 1}`;
    if (body.dataset.key !== key) {
      clear(body);
      body.dataset.key = key;
      if (want.length === 1) body.append(want[0]);
      else body.append(...want.map((w, k) => el('div', { class: 'ab-block', 'data-run': k ? 'B' : 'A' },
        el('div', { class: 'ab-label', text: k ? `B: ${b!.name} (${b!.meta.matmulPath || b!.meta.backend})` : `A: ${t.name} (${t.meta.matmulPath || t.meta.backend})` }), w)));
    }
    const step = t.steps[i];
    if (!step) return;
    const stepB = b?.steps[i];
    if (tab === 'timings' || tab === 'kernels') {
      this.timings.update(t, step);
      if (b && stepB) this.timingsB.update(b, stepB);
    }
    if (tab === 'compare' && cmp && b) this.compare.update(t, b, cmp, i);
    if (tab === 'roofline') this.roofline.update(t, step);
    if (tab === 'tokens') {
      this.tokens.update(t, i);
      if (b) this.tokensB.update(b, i);
    }
  }

  // ----- status --------------------------------------------------------------------------

  private setBusy(text: string): void {
    document.body.dataset.state = 'loading';
    clear(this.root);
    this.root.append(header(null, null, this.pickFile), el('div', { class: 'busy', text }));
  }

  private setReady(): void {
    document.body.dataset.state = 'ready';
  }

  showError(message: string): void {
    document.body.dataset.state = 'error';
    clear(this.root);
    const box = el('div', { class: 'error-box', role: 'alert' }, el('strong', { text: 'Cannot show this trace. ' }), el('span', { class: 'error-message', text: message }));
    const open = el('button', { text: 'Open another file…' });
    open.addEventListener('click', this.pickFile);
    this.root.append(header(null, null, this.pickFile), el('main', { class: 'landing' }, box, el('p', {}, el('a', { href: './', text: '← back to the trace list' }), ' ', open)));
  }

  // Hooks for the e2e tests and the page-speed benchmark.
  debugApi() {
    return {
      setStep: (i: number) => setStep(this.store, i),
      selectNode: (id: number) => selectNode(this.store, id),
      lastStepMs: () => this.lastStepMs,
      lastStepParts: () => this.lastStepParts,
      lastDetailsMs: () => this.lastDetailsMs,
      allStepsLoaded: () => this.allLoaded,
      steps: () => this.s.trace?.steps.length ?? 0,
      nodeCount: () => this.graphView.nodeCount,
      findNode: (name: string) => graphOf(this.s).nodes.find((n) => n.name === name)?.id ?? -1,
      graphCoverage: () => this.graphView.coverage(),
      nodeText: (id: number) => this.graphView.nodeText(id),
    };
  }
}
