// The trace view: header, toolbar, the graph (or pipeline) with its legend, the inspector and
// the bottom tabs, laid out for a newly shown trace (show) and then redrawn part by part as the
// selection in the store changes (onChange says which change redraws what).
import { findNodeByKey } from '../model/graph-index';
import { traceHasKernels } from '../model/gpu-time';
import type { Trace } from '../model/types';
import { Playback } from '../playback';
import { back, moveNode, redrawStep, selectNode, setStep } from '../state/navigation';
import { firstDivergence, graphOf, openingSelection, type Loaded, type Selection, type SelectionStore } from '../state/selection';
import { clear, el } from '../ui/dom';
import { fmtMs } from '../ui/format';
import { bottomSplitter } from '../ui/splitter';
import type { UrlState } from '../url-state';
import { GraphView } from '../views/graph-view';
import { header } from '../views/header';
import { NodeColouring } from '../views/node-styles';
import { PipelineView } from '../views/pipeline-view';
import { toolbar } from '../views/toolbar';
import { BottomTabs } from './bottom-tabs';
import { DetailsPane } from './details-pane';
import { markReady } from './screens';

export class TracePage {
  readonly graphView = new GraphView((id) => selectNode(this.store, id));
  private pipeline = new PipelineView((s) => this.store.set({ stage: s }, { force: true }));
  readonly details: DetailsPane;
  private tabs: BottomTabs;
  private colouring = new NodeColouring();
  private playback: Playback;
  // For the page-speed benchmark: the last step change's time, by part.
  readonly perf = { lastStepMs: 0, lastStepParts: {} as Record<string, number> };

  constructor(private root: HTMLElement, private store: SelectionStore, private pickFile: () => void, setReference: (ref: 'a' | 'b') => void) {
    this.details = new DetailsPane(store, this.pipeline, (id) => this.goToNode(id), () => this.back());
    this.tabs = new BottomTabs(store, (id) => this.goToNode(id), setReference);
    this.playback = new Playback(store, () => this.moveNode(1, true), playButton);
    store.subscribe(null, (s, changed) => this.onChange(s, changed));
  }

  private get s(): Readonly<Selection> {
    return this.store.get();
  }

  // A newly loaded trace: the whole selection is set, then the page is laid out for it.
  // `want`: a deep link's step, node and view; `banner`: a live run's, above the graph.
  show(l: Loaded, want: UrlState | null, banner: HTMLElement | null): void {
    const { trace, traceB, cmp } = l;
    this.playback.stop();
    this.colouring.clear();
    this.tabs.selectNode(null);
    const first = firstDivergence(cmp);   // the node that first adds error
    this.store.set(openingSelection(l, want, this.s.view), { force: true });
    clear(this.root);
    const warnings = el('div', { class: 'warnings' }, ...trace.warnings.map((w) => el('div', { class: 'warning', text: w })));
    if (traceB) for (const w of traceB.warnings) warnings.append(el('div', { class: 'warning', text: `B: ${w}` }));
    const main = el('main', { class: 'trace-view' },
      el('div', { class: 'graph-pane' }, cmp ? this.tabs.compare.banner : banner, this.graphView.legendHost, this.graphView.root, this.pipeline.root), this.details.inspector.root);
    this.applyView();
    const bottom = this.tabs.element();
    const splitter = bottomSplitter(bottom, () => this.graphView.cull());
    this.root.append(header(trace, traceB, this.pickFile), warnings, this.toolbar(), main, splitter, bottom);
    this.graphView.setGraph(graphOf(this.s));
    this.tabs.setTraces(l);
    if (first && cmp && traceB) this.graphView.mark([first.node]);
    this.details.inspector.empty();
    requestAnimationFrame(() => {
      this.graphView.fit(true);
      redrawStep(this.store, this.s.step);
      if (first) this.goToNode(first.node);
      const id = want?.node ? findNodeByKey(graphOf(this.s), want.node) : -1;
      if (id >= 0) this.goToNode(id);
      markReady();
      // The frame after this one shows the graph: the page-speed benchmark reads this mark.
      requestAnimationFrame(() => performance.mark('minfer:graph-painted'));
    });
  }

  // What each change of the selection redraws. A new trace is laid out by show() itself.
  private onChange(s: Readonly<Selection>, changed: ReadonlySet<keyof Selection>): void {
    if (changed.has('trace') || !s.trace) return;
    if (changed.has('cmp')) this.comparisonChanged();
    if (changed.has('view')) this.viewChanged();
    if (changed.has('step')) this.stepChanged();
    if (changed.has('metric')) this.restyle();
    if (changed.has('node') && s.node !== null) this.nodeChanged();
    if (changed.has('stage') && s.stage) this.details.renderStage();
    if (changed.has('tab')) this.tabs.tabChanged();
  }

  // ----- the data behind the shown trace changed (more steps, texts, a live run) ------------

  // A sliced trace's step arrived; the one shown is redrawn.
  stepLoaded(k: number): void {
    if (k === this.s.step) { this.restyle(); this.deferDetails(); }
  }

  // Every step is here: colour ranges span all steps, so they are computed again.
  allStepsLoaded(trace: Trace): void {
    this.colouring.clear();
    this.restyle();
    this.tabs.tokensChanged(trace);
    this.tabs.refresh();
  }

  // Token texts were filled in; the warning about "#id" tokens goes when none is left.
  vocabularyFilled(trace: Trace): void {
    this.tabs.tokensChanged(trace);
    this.tabs.refresh();
    if (!trace.warnings.some((w) => /shown as #id/.test(w))) this.root.querySelectorAll('.warnings .warning').forEach((w) => { if (/shown as #id/.test(w.textContent ?? '')) w.remove(); });
  }

  stepsGrew(count: number): void {
    const slider = document.getElementById('step-slider') as HTMLInputElement | null;
    if (slider) slider.max = String(count - 1);
  }

  tokensChanged(trace: Trace): void {
    this.tabs.tokensChanged(trace);
    if (this.s.step === trace.steps.length - 1) this.tabs.refresh();
  }

  recolour(clearRanges: boolean, mark: number[] | null): void {
    if (clearRanges) this.colouring.clear();
    if (mark) this.graphView.mark(mark);
    this.restyle();
  }

  // ----- what a change of the selection redraws ------------------------------------------

  private comparisonChanged(): void {
    this.colouring.clear();
    this.tabs.comparisonChanged();
    this.restyle();
    this.tabs.refresh();
    if (this.s.node !== null) this.details.renderNode();
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
    this.perf.lastStepMs = performance.now() - t0;
    this.perf.lastStepParts = parts;
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
    this.tabs.selectNode(id);
    this.details.renderNode();
    document.body.dataset.node = String(id);
  }

  private deferDetails(): void {
    this.details.defer(() => this.tabs.refresh());
  }

  private viewChanged(): void {
    const v = this.s.view;
    this.applyView();
    document.querySelectorAll('.view-btn').forEach((b) => b.classList.toggle('on', (b as HTMLElement).dataset.view === v));
    this.restyle();
    if (v === 'ops') { this.graphView.cull(); if (this.s.node !== null) this.details.renderNode(); }
  }

  private applyView(): void {
    this.graphView.root.style.display = this.s.view === 'ops' ? '' : 'none';
    this.pipeline.root.style.display = this.s.view === 'pipeline' ? '' : 'none';
    if (this.s.trace) this.pipeline.setGraph(graphOf(this.s));
    document.body.dataset.view = this.s.view;
  }

  // ----- the user's moves that also move the graph (keys, toolbar, panels) -----------------

  goToNode(id: number): void {
    selectNode(this.store, id);
    this.graphView.centerOn(id);
  }

  back(): void {
    const id = back(this.store);
    if (id !== null) this.graphView.centerOn(id);
  }

  // ←/→ walk the executed nodes in execution order, across step boundaries in play mode.
  moveNode(delta: number, wrapSteps = false): boolean {
    const id = moveNode(this.store, delta, wrapSteps);
    if (id === null) return false;
    if (!this.graphView.isCollapsed(id)) this.graphView.centerOn(id);
    return true;
  }

  togglePlay(): void {
    this.playback.toggle();
  }

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
}

function playButton(playing: boolean): void {
  const b = document.getElementById('play');
  if (b) { b.textContent = playing ? '⏸ pause' : '▶ play'; b.classList.toggle('on', playing); }
}
