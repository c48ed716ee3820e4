// The application, as wiring: what is shown lives in a store (state/selection.ts) that the
// trace page redraws from (page/trace-page.ts) and the URL follows (page/url-sync.ts); traces
// come from the loader (io/trace-loader.ts), live runs from their controller (page/live-run.ts);
// keys and local files have their own bindings. This file decides what opens when.
import { serverApi, TraceLoader } from './io/trace-loader';
import { isPaired } from './model/paired';
import type { Trace } from './model/types';
import { localFiles } from './page/file-drop';
import { bindKeys } from './page/keyboard';
import { LiveRunController } from './page/live-run';
import { busyScreen, errorScreen, landingScreen } from './page/screens';
import { TracePage } from './page/trace-page';
import { syncUrl } from './page/url-sync';
import { selectNode, setStep } from './state/navigation';
import { graphOf, selectionStore, type Loaded } from './state/selection';
import { readLiveRun, readUrl, type UrlState } from './url-state';

export class App {
  private store = selectionStore();
  private pickFile = localFiles((f) => void this.openFile(f));
  private loader = new TraceLoader(serverApi, (text) => busyScreen(this.root, text, this.pickFile));
  private page: TracePage;
  private live: LiveRunController;
  private initial: UrlState | null = null;   // the deep link, until the first trace is shown
  private allLoaded = true;                  // every step of a sliced trace has arrived

  constructor(private root: HTMLElement) {
    this.page = new TracePage(root, this.store, this.pickFile, (ref) => { void this.setReference(ref).catch((e) => this.showError((e as Error).message)); });
    this.live = new LiveRunController(this.store, {
      busy: (text) => busyScreen(root, text, this.pickFile),
      show: (l, banner) => this.show(l, banner),
      stepsGrew: (n) => this.page.stepsGrew(n),
      tokensChanged: (t) => this.page.tokensChanged(t),
      recolour: (clearRanges, mark) => this.page.recolour(clearRanges, mark),
    });
    bindKeys(document, () => !!this.store.get().trace, {
      moveNode: (d) => this.page.moveNode(d),
      stepBy: (d) => setStep(this.store, this.store.get().step + d),
      togglePlay: () => this.page.togglePlay(),
      back: () => this.page.back(),
      focusSearch: () => document.getElementById('search')?.focus(),
      fit: () => this.page.graphView.fit(),
      toggleView: () => this.store.set({ view: this.store.get().view === 'ops' ? 'pipeline' : 'ops' }),
    });
    syncUrl(this.store);
  }

  async start(): Promise<void> {
    const u = readUrl(location.search);
    this.initial = u;
    try {
      const live = readLiveRun(location.search);
      if (live !== null) this.live.attach(live);
      else if (u.a && u.b) this.show(await this.loader.comparison(u.a, u.b));
      else if (u.trace) await this.openServerTrace(u.trace);
      else await this.showList();
    } catch (e) {
      this.showError((e as Error).message);
    }
  }

  private async showList(): Promise<void> {
    this.live.close();
    landingScreen(this.root, await this.loader.landing(), this.pickFile, (r) => this.live.start(r));
  }

  // A sliced trace shows its first step at once; the other steps arrive in the background.
  private async openServerTrace(name: string): Promise<void> {
    this.live.close();
    const { loaded, rest } = await this.loader.server(name, this.initial?.step ?? 0);
    if (!isPaired(loaded.trace)) this.allLoaded = !rest;
    this.show(loaded);
    if (!rest) return;
    const trace = loaded.trace;
    const shown = () => this.store.get().trace === trace;
    void rest((k) => { if (shown()) this.page.stepLoaded(k); })
      .then(() => {
        if (!shown()) return;
        this.allLoaded = true;
        this.page.allStepsLoaded(trace);
      }).catch((e) => this.showError((e as Error).message));
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

  // The comparison's reference switched (the Comparison tab): the server measures again.
  private async setReference(ref: 'a' | 'b'): Promise<void> {
    const s = this.store.get();
    if (!s.trace || !s.traceB) return;
    const cmp = await this.loader.reference(s.source, ref);
    if (cmp) this.store.set({ cmp });
  }

  // Every trace goes on screen here: the deep link applies to the first one only.
  private show(l: Loaded, banner: HTMLElement | null = null): void {
    const want = this.initial;
    this.initial = null;
    this.page.show(l, want, banner);
    if (l.trace.version === 1) void this.fillVocabulary(l.trace);
  }

  // Version-1 top-k entries have no text: the server's copy of the model may have it.
  private async fillVocabulary(trace: Trace): Promise<void> {
    if (await this.loader.vocabulary(trace, () => this.store.get().trace === trace)) this.page.vocabularyFilled(trace);
  }

  showError(message: string): void {
    errorScreen(this.root, message, this.pickFile);
  }

  // Hooks for the e2e tests and the page-speed benchmark.
  debugApi() {
    const gv = this.page.graphView, perf = this.page.perf, details = this.page.details;
    return {
      setStep: (i: number) => setStep(this.store, i),
      selectNode: (id: number) => selectNode(this.store, id),
      lastStepMs: () => perf.lastStepMs,
      lastStepParts: () => perf.lastStepParts,
      lastDetailsMs: () => details.lastMs,
      allStepsLoaded: () => this.allLoaded,
      steps: () => this.store.get().trace?.steps.length ?? 0,
      nodeCount: () => gv.nodeCount,
      findNode: (name: string) => graphOf(this.store.get()).nodes.find((n) => n.name === name)?.id ?? -1,
      graphCoverage: () => gv.coverage(),
      nodeText: (id: number) => gv.nodeText(id),
    };
  }
}
