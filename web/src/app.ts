// The application: loads traces (server list, local file, drag and drop, deep links), owns the
// state (step, node, metric, filters, playback) and tells the views what changed.
import { fetchComparison, fetchTrace, fetchTraceProgressive, listTraces, listedVersion } from './io/api';
import { readLocalFile } from './io/read-file';
import { defaultReference, type Comparison } from './model/compare';
import { isPaired, pairedComparison, referenceTrace } from './model/paired';
import { TraceError } from './model/errors';
import { parseTraceText } from './model/parse';
import type { MetricId } from './model/metrics';
import { traceHasKernels } from './model/gpu-time';
import { findNodeByKey, nodeKey } from './model/graph-index';
import type { Trace, TraceGraph } from './model/types';
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
import { Player } from './playback';
import { TokensPanel } from './views/tokens-panel';
import { PipelineView, stageDetails } from './views/pipeline-view';
import type { Stage } from './model/pipeline';
import { traceListView } from './views/trace-list';
import { bottomSplitter } from './ui/splitter';
import { readUrl, writeUrl, type UrlState } from './url-state';
import { cancelRun, liveModels, runEvents, startRun, vocabTexts, type RunRequest } from './io/live';
import { applyVocabulary, idsWithoutText } from './model/parse-v1';
import { applyGraph, applyNode, applyStep, applyStepEnd, applyToken, liveTrace, type LiveStart } from './model/live-trace';
import { LiveBanner } from './views/live-banner';
import { runPanel } from './views/run-panel';

type Tab = 'tokens' | 'timings' | 'kernels' | 'roofline' | 'compare';

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
  private colouring = new NodeColouring();
  lastStepMs = 0;
  private allLoaded = true;
  lastStepParts: Record<string, number> = {};

  private player = new Player((on) => this.updatePlayButton(on));
  private graphView = new GraphView((id) => this.selectNode(id));
  private inspector = new Inspector((id) => this.selectNode(id), () => this.back());
  private tokens = new TokensPanel((i) => this.setStep(i));
  private tokensB = new TokensPanel((i) => this.setStep(i));
  private timings = new TimingsPanel((id) => { this.selectNode(id); this.graphView.centerOn(id); }, (i) => this.setStep(i));
  private timingsB = new TimingsPanel((id) => { this.selectNode(id); this.graphView.centerOn(id); }, (i) => this.setStep(i));
  private roofline = new RooflinePanel((id) => { this.selectNode(id); this.graphView.centerOn(id); });
  private source: { trace: string | null; a: string | null; b: string | null } = { trace: null, a: null, b: null };
  private initial: UrlState | null = null;
  private view: 'ops' | 'pipeline' = 'ops';
  private stage: Stage | null = null;
  private pipeline = new PipelineView((s) => this.selectStage(s));
  private compare = new ComparePanel((s, n) => { this.setStep(s); if (n >= 0) { this.selectNode(n); this.graphView.centerOn(n); } },
    (ref) => { void this.setReference(ref).catch((e) => this.showError((e as Error).message)); });
  private fileInput = el('input', { type: 'file', accept: '.json,.gz,application/json,application/gzip', style: 'display:none' });

  constructor(private root: HTMLElement) {
    this.fileInput.addEventListener('change', () => { const f = this.fileInput.files?.[0]; if (f) void this.openFile(f); });
    document.body.append(this.fileInput);
    this.installDrop();
    document.addEventListener('keydown', (e) => this.onKey(e));
  }

  async start(): Promise<void> {
    const u = readUrl(location.search);
    this.initial = u;
    const { a, b, trace: t } = u;
    try {
      const live = new URLSearchParams(location.search).get('live');
      if (live && /^\d+$/.test(live)) this.attachLive(Number(live));
      else if (a && b) await this.openComparison(a, b);
      else if (t) await this.openServerTrace(t);
      else await this.showList();
    } catch (e) {
      this.showError((e as Error).message);
    }
  }

  // ----- loading -------------------------------------------------------------------------

  private async showList(): Promise<void> {
    this.closeLive();
    this.setBusy('loading the trace list…');
    let entries = null, err = null;
    const models = liveModels();
    try { entries = await listTraces(); } catch (e) { err = (e as Error).message; }
    const live = await models;
    clear(this.root);
    this.root.append(header(null, null, () => this.fileInput.click()), el('main', { class: 'landing' },
      live && live.models.length ? runPanel(live, (r) => this.startLive(r)) : null,
      traceListView(entries, err, () => this.fileInput.click())));
    this.setReady();
  }

  // ----- live runs -----------------------------------------------------------------------

  private live: { close: () => void } | null = null;
  private follow = true;   // a live run: show each new step as it starts

  private closeLive(): void {
    this.live?.close();
    this.live = null;
  }

  private async startLive(req: RunRequest): Promise<void> {
    const run = await startRun(req);
    history.replaceState(null, '', `${location.pathname}?live=${run.id}`);
    this.attachLive(run.id);
  }

  // Shows run `id` as it happens: the graph appears with the first graph event, each step's
  // nodes light up as the engine reports them, tokens arrive in the Tokens tab. Events only
  // update the trace; the page redraws at most once per frame (a fast model sends thousands of
  // node events a second).
  private attachLive(id: number): void {
    this.closeLive();
    this.setBusy(`waiting for run ${id}…`);
    let trace: ReturnType<typeof liveTrace> | null = null;
    let shown = false, queued = false, lastDomains = 0, lastTokens = 0, saved = '', lastNode = -1, progress = '';
    let newSteps = false, newTokens = false, shownStep = -1;   // shownStep: the newest finished step
    const banner = new LiveBanner(() => { void cancelRun(); });
    const flush = () => {
      queued = false;
      if (!trace || !shown || this.trace !== trace) return;
      const now = performance.now();
      if (newSteps) {
        newSteps = false;
        const slider = document.getElementById('step-slider') as HTMLInputElement | null;
        if (slider) slider.max = String(trace.steps.length - 1);
      }
      // Following the run shows the newest finished step: a step's nodes are reported after it
      // ran, so the running step would be blank (or half lit, on a fast model).
      if (this.follow && shownStep >= 0 && shownStep !== this.step) this.setStep(shownStep, true);
      if (newTokens && now - lastTokens > 250) {
        newTokens = false; lastTokens = now;
        this.tokens.setTrace(trace);
        if (this.step === trace.steps.length - 1) this.refreshTab();
      } else if (newTokens) schedule();
      if (now - lastDomains > 300) { this.colouring.clear(); lastDomains = now; }
      if (lastNode >= 0) this.graphView.mark(trace.complete ? [] : [lastNode]);
      this.restyle();
      banner.progress(progress);
    };
    const schedule = () => { if (!queued) { queued = true; requestAnimationFrame(flush); } };
    const close = runEvents(id, (type, d) => {
      if (type === 'start') { trace = liveTrace(d as unknown as LiveStart); saved = String(d.trace); document.body.dataset.live = 'running'; return; }
      if (!trace) return;
      if (shown && this.trace !== trace) return;   // the user opened something else
      switch (type) {
        case 'graph':
          applyGraph(trace, d);
          if (!shown) { shown = true; this.follow = true; this.source = { trace: null, a: null, b: null }; this.show(trace, null, null, banner.root); }
          break;
        case 'step': {
          const s = applyStep(trace, d);
          newSteps = true;
          progress = `run ${id} → ${saved}: step ${s.index} (${s.phase}, ${s.tokens.length} token(s) in)`;
          document.body.dataset.liveStep = String(s.index);
          break;
        }
        case 'node':
          lastNode = applyNode(trace, d);
          break;
        case 'token':
          applyToken(trace, d);
          newTokens = true;
          break;
        case 'step_end':
          applyStepEnd(trace, d);
          shownStep = Number(d.step);
          break;
        case 'done': {
          trace.complete = true;
          newTokens = true; lastTokens = 0;
          // A run cancelled before its first step saves no trace ("trace": null).
          if (d.trace === null) saved = '';
          const msg = `${d.cancelled ? 'Cancelled' : 'Done'}: ${d.steps} step(s), ${d.generated} token(s) generated; ${saved ? `saved as ${saved}` : 'no trace saved'}`;
          progress = msg;
          listTraces().then((list) => banner.done(msg, saved, list.filter((e) => !e.error && e.name !== saved)))
            .catch(() => banner.done(msg, saved, []))
            .finally(() => { document.body.dataset.live = 'done'; });
          break;
        }
        case 'error':
          banner.failed(String(d.message));
          document.body.dataset.live = 'error';
          return;
      }
      schedule();
    }, (msg) => { banner.failed(msg); document.body.dataset.live = 'error'; });
    this.live = { close };
  }

  private async openServerTrace(name: string): Promise<void> {
    this.closeLive();
    this.setBusy(`loading ${name}…`);
    const p = await fetchTraceProgressive(name, this.initial?.step ?? 0, await listedVersion(name));
    if (isPaired(p.trace)) {   // shown as a comparison of its two runs: every step's records first
      this.setBusy(`loading every step of the paired trace ${name}…`);
      await p.loadRest(() => {});
      this.source = { trace: name, a: null, b: null };
      this.showPaired(p.trace);
      return;
    }
    this.source = { trace: name, a: null, b: null };
    this.allLoaded = !p.sliced;
    this.show(p.trace, null, null);
    if (!p.sliced) return;
    const trace = p.trace;
    void p.loadRest((k) => {
      if (this.trace !== trace) return;
      if (k === this.step) { this.restyle(); this.deferDetails(); }
    }).then(() => {
      if (this.trace !== trace) return;
      this.allLoaded = true;
      this.colouring.clear();       // colour ranges are over all steps: now they are all here
      this.restyle();
      this.tokens.setTrace(trace);
      this.refreshTab();
    }).catch((e) => this.showError((e as Error).message));
  }

  // The reference (what SQNR is measured against) is the float path by default; the server
  // measures against its first trace, so B as reference asks it for (b, a).
  private async openComparison(a: string, b: string): Promise<void> {
    this.setBusy(`loading ${a} and ${b} and their comparison…`);
    const [ta, tb] = await Promise.all([fetchTrace(a), fetchTrace(b)]);
    this.source = { trace: null, a, b };
    if (a === b && isPaired(ta)) { this.showPaired(ta); return; }   // a paired trace against itself: A against its reference
    const cmp = await fetchComparison(a, b, defaultReference(ta.meta.matmulPath, tb.meta.matmulPath) === 'b');
    this.show(ta, tb, cmp);
  }

  private async setReference(ref: 'a' | 'b'): Promise<void> {
    const { a, b } = this.source;
    if (!a || !b || !this.trace || !this.traceB) return;
    const cmp = await fetchComparison(a, b, ref === 'b');
    this.cmp = cmp;
    this.colouring.clear();
    this.compare.setComparison(this.trace, this.traceB, cmp);
    this.restyle();
    this.refreshTab();
    if (this.node !== null) this.renderInspector();
  }

  private showPaired(trace: Trace): void {
    this.show(trace, referenceTrace(trace), pairedComparison(trace));
  }

  async openFile(f: File): Promise<void> {
    this.closeLive();
    this.setBusy(`reading ${f.name}…`);
    try {
      const trace = parseTraceText(await readLocalFile(f), f.name);
      history.replaceState(null, '', location.pathname);
      this.source = { trace: null, a: null, b: null };
      this.initial = null;
      if (isPaired(trace)) this.showPaired(trace);
      else this.show(trace, null, null);
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

  // Version-1 top-k entries have no text: the server's copy of the model (--model) has it.
  private async fillVocabulary(trace: Trace): Promise<void> {
    const ids = idsWithoutText(trace);
    const texts = await vocabTexts(trace.meta.modelFile, ids);
    if (!texts || this.trace !== trace) return;
    applyVocabulary(trace, texts);
    this.tokens.setTrace(trace);
    this.refreshTab();
    if (!trace.warnings.some((w) => /shown as #id/.test(w))) document.querySelectorAll('.warnings .warning').forEach((w) => { if (/shown as #id/.test(w.textContent ?? '')) w.remove(); });
  }

  private show(trace: Trace, traceB: Trace | null, cmp: Comparison | null, banner: HTMLElement | null = null): void {
    this.player.stop();
    this.trace = trace; this.traceB = traceB; this.cmp = cmp;
    this.colouring.clear();
    this.backStack = [];
    this.node = null;
    this.timings.selectNode(null);
    this.roofline.select(null);
    this.timingsB.selectNode(null);
    const first = cmp?.firstLocal ?? cmp?.firstDivergent ?? null;   // the node that first adds error
    this.step = first?.step ?? 0;
    this.metric = cmp ? 'error' : 'absmax';
    this.tab = cmp ? 'compare' : 'tokens';
    const want = this.initial;
    this.initial = null;
    if (want?.step !== null && want?.step !== undefined && want.step < trace.steps.length) this.step = want.step;
    clear(this.root);
    const warnings = el('div', { class: 'warnings' }, ...trace.warnings.map((w) => el('div', { class: 'warning', text: w })));
    if (traceB) for (const w of traceB.warnings) warnings.append(el('div', { class: 'warning', text: `B: ${w}` }));
    this.view = want?.view ?? this.view;
    this.stage = null;
    const main = el('main', { class: 'trace-view' },
      el('div', { class: 'graph-pane' }, cmp ? this.compare.banner : banner, this.graphView.legendHost, this.graphView.root, this.pipeline.root), this.inspector.root);
    this.applyView();
    const bottom = this.bottom();
    const splitter = bottomSplitter(bottom, () => this.graphView.cull());
    this.root.append(header(trace, traceB, () => this.fileInput.click()), warnings, this.toolbar(), main, splitter, bottom);
    this.graphView.setGraph(this.graphOf(this.step));
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
      this.setStep(this.step, true);
      if (first) { this.selectNode(first.node); this.graphView.centerOn(first.node); }
      const id = want?.node ? findNodeByKey(this.graphOf(this.step), want.node) : -1;
      if (id >= 0) { this.selectNode(id); this.graphView.centerOn(id); }
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
    if (!force) this.follow = i >= t.steps.length - 2;   // a live run keeps showing new steps while at (one of) the last
    const t0 = performance.now();
    this.step = i;
    const step = t.steps[i];
    const parts: Record<string, number> = {};
    let tp = t0;
    const lap = (k: string) => { const now = performance.now(); parts[k] = now - tp; tp = now; };
    const redrawn = this.graphView.setGraph(this.graphOf(i));
    if (redrawn) this.graphView.fit(true);
    this.pipeline.setGraph(this.graphOf(i));
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
    this.saveUrl();
  }

  private restyle(): void {
    const t = this.trace!;
    const { styles, legendKey, legend } = this.colouring.paint(t, this.step, this.graphOf(this.step), this.metric, this.cmp);
    if (this.view === 'ops') this.graphView.restyle(styles);
    else this.pipeline.update(t.steps[this.step], styles);
    if (this.graphView.legendHost.dataset.key !== legendKey) {
      clear(this.graphView.legendHost);
      this.graphView.legendHost.append(legend());
      this.graphView.legendHost.dataset.key = legendKey;
    }
  }

  selectNode(id: number, pushBack = true): void {
    if (!this.trace) return;
    if (pushBack && this.node !== null && this.node !== id) this.backStack.push(this.node);
    this.node = id;
    this.graphView.select(id);
    this.timings.selectNode(id);
    this.timingsB.selectNode(id);
    this.roofline.select(id);
    this.renderInspector();
    document.body.dataset.node = String(id);
    this.saveUrl();
  }

  private detailsFrame = 0;
  lastDetailsMs = 0;

  private deferDetails(): void {
    cancelAnimationFrame(this.detailsFrame);
    const stepAt = this.step;
    this.detailsFrame = requestAnimationFrame(() => {
      const t0 = performance.now();
      if (this.view === 'pipeline' && this.stage) this.renderStage();
      else if (this.node !== null) this.renderInspector();
      const t1 = performance.now();
      this.detailsFrame = requestAnimationFrame(() => {
        const t2 = performance.now();
        if (this.step === stepAt) this.refreshTab();
        this.lastDetailsMs = t1 - t0 + performance.now() - t2;
        document.body.dataset.detailsStep = String(stepAt);
      });
    });
  }

  private saveUrl(): void {
    if (!this.trace || (!this.source.trace && !this.source.a)) return;
    const g = this.graphOf(this.step);
    const node = this.node === null || !g.nodes[this.node] ? null : nodeKey(g, this.node);
    writeUrl({ ...this.source, step: this.step, node, view: this.view });
  }

  // ----- operators / pipeline ------------------------------------------------------------

  setView(v: 'ops' | 'pipeline'): void {
    if (v === this.view) return;
    this.view = v;
    this.applyView();
    document.querySelectorAll('.view-btn').forEach((b) => b.classList.toggle('on', (b as HTMLElement).dataset.view === v));
    if (this.trace) { this.restyle(); if (v === 'ops') { this.graphView.cull(); if (this.node !== null) this.renderInspector(); } }
    this.saveUrl();
  }

  private applyView(): void {
    this.graphView.root.style.display = this.view === 'ops' ? '' : 'none';
    this.pipeline.root.style.display = this.view === 'pipeline' ? '' : 'none';
    if (this.trace) this.pipeline.setGraph(this.graphOf(this.step));
    document.body.dataset.view = this.view;
  }

  private selectStage(s: Stage): void {
    this.stage = s;
    this.renderStage();
  }

  private renderStage(): void {
    const g = this.graphOf(this.step), s = this.stage!;
    // The same stage in this step's graph (prefill and decode graphs differ in shapes only).
    const cur = this.pipeline.stages ? [...this.pipeline.stages.byNode.values(), ...this.pipeline.stages.tail].find((x) => x.key === s.key) ?? s : s;
    this.inspector.custom(stageDetails(g, cur, this.trace!.steps[this.step], (id) => {
      this.setView('ops');
      this.selectNode(id);
      this.graphView.centerOn(id);
    }));
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
      source: this.cmp.metricsSource, refIsA: this.cmp.reference === 'a',
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
    else if (k === 'p') this.setView(this.view === 'ops' ? 'pipeline' : 'ops');
    else return;
    e.preventDefault();
  }

  // ----- chrome --------------------------------------------------------------------------



  private toolbar(): HTMLElement {
    return toolbar(
      { steps: this.trace!.steps.length, step: this.step, speed: this.speed, playMode: this.playMode, metric: this.metric, comparing: !!this.cmp, view: this.view, gpu: traceHasKernels(this.trace!) },
      {
        setStep: (i) => this.setStep(i),
        setView: (v) => this.setView(v),
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
    if (traceHasKernels(this.trace!)) tabs.push(['roofline', 'Roofline']);
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
    const b = this.traceB;
    // In comparison mode the tokens, timings and timeline tabs show A above B.
    const pick = (which: 'A' | 'B'): HTMLElement => {
      const tok = which === 'A' ? this.tokens : this.tokensB, tim = which === 'A' ? this.timings : this.timingsB;
      return this.tab === 'tokens' ? tok.root : this.tab === 'timings' ? tim.root : tim.kernelsRoot;
    };
    const want: HTMLElement[] = this.tab === 'compare' ? [this.compare.root] : this.tab === 'roofline' ? [this.roofline.root]
      : b ? [pick('A'), pick('B')] : [pick('A')];
    const key = `${this.tab}|${b ? 2 : 1}`;
    if (body.dataset.key !== key) {
      clear(body);
      body.dataset.key = key;
      if (want.length === 1) body.append(want[0]);
      else body.append(...want.map((w, i) => el('div', { class: 'ab-block', 'data-run': i ? 'B' : 'A' },
        el('div', { class: 'ab-label', text: i ? `B: ${b!.name} (${b!.meta.matmulPath || b!.meta.backend})` : `A: ${this.trace!.name} (${this.trace!.meta.matmulPath || this.trace!.meta.backend})` }), w)));
    }
    const step = this.trace.steps[this.step];
    if (!step) return;
    const stepB = b?.steps[this.step];
    if (this.tab === 'timings' || this.tab === 'kernels') {
      this.timings.update(this.trace, step);
      if (b && stepB) this.timingsB.update(b, stepB);
    }
    if (this.tab === 'compare' && this.cmp && b) this.compare.update(this.trace, b, this.cmp, this.step);
    if (this.tab === 'roofline') this.roofline.update(this.trace, step);
    if (this.tab === 'tokens') {
      this.tokens.update(this.trace, this.step);
      if (b) this.tokensB.update(b, this.step);
    }
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
      lastDetailsMs: () => this.lastDetailsMs,
      allStepsLoaded: () => this.allLoaded,
      steps: () => this.trace?.steps.length ?? 0,
      nodeCount: () => this.graphView.nodeCount,
      findNode: (name: string) => this.graphOf(this.step).nodes.find((n) => n.name === name)?.id ?? -1,
      graphCoverage: () => this.graphView.coverage(),
      nodeText: (id: number) => this.graphView.nodeText(id),
    };
  }
}
