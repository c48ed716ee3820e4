// A live run on the page (docs/live-runs.md). The Run panel starts it; its Server-Sent Events
// build a live Trace (model/live-trace.ts): the graph appears with the first graph event, each
// step's nodes light up as the engine reports them, tokens arrive in the Tokens tab. Events
// only update the trace; the page redraws at most once per frame (a fast model sends thousands
// of node events a second), through LivePage.
import { listTraces } from '../io/api';
import { cancelRun, runEvents, startRun, type RunRequest } from '../io/live';
import { applyGraph, applyNode, applyStep, applyStepEnd, applyToken, liveTrace, type LiveStart } from '../model/live-trace';
import type { Trace } from '../model/types';
import { redrawStep } from '../state/navigation';
import type { Loaded, SelectionStore } from '../state/selection';
import { LiveBanner } from '../views/live-banner';

// What the controller asks of the page.
export interface LivePage {
  busy(text: string): void;                       // until the run's graph is known
  show(l: Loaded, banner: HTMLElement): void;     // the graph is known: lay the page out
  stepsGrew(count: number): void;                 // the step slider's range
  tokensChanged(trace: Trace): void;              // the Tokens tab
  recolour(clearRanges: boolean, mark: number[] | null): void;   // node colours; `mark`: the node being reported
}

type Banner = Pick<LiveBanner, 'progress' | 'done' | 'failed'> & { root: HTMLElement };

// The browser around the controller (tests give fakes).
export interface LiveDeps {
  events: typeof runEvents; start: typeof startRun; cancel: typeof cancelRun; list: typeof listTraces;
  frame(f: () => void): void;
  now(): number;
  banner(onCancel: () => void): Banner;
  marks: Record<string, string | undefined>;     // document.body.dataset: what the e2e tests wait on
  setUrl(search: string): void;
}

export function browserDeps(): LiveDeps {
  return {
    events: runEvents, start: startRun, cancel: cancelRun, list: listTraces,
    frame: (f) => requestAnimationFrame(f), now: () => performance.now(),
    banner: (onCancel) => new LiveBanner(onCancel), marks: document.body.dataset,
    setUrl: (search) => history.replaceState(null, '', `${location.pathname}${search}`),
  };
}

const TOKENS_EVERY_MS = 250;    // the Tokens tab redraws at most this often
const RANGES_EVERY_MS = 300;    // colour ranges (over all steps) are recomputed at most this often

export class LiveRunController {
  private closeEvents: (() => void) | null = null;

  constructor(private store: SelectionStore, private page: LivePage, private deps: LiveDeps = browserDeps()) {}

  // The Run panel's Run: the URL names the run, so a reload follows it again.
  async start(req: RunRequest): Promise<void> {
    const run = await this.deps.start(req);
    this.deps.setUrl(`?live=${run.id}`);
    this.attach(run.id);
  }

  // Stops listening (the user opened something else); the run goes on on the server.
  close(): void {
    this.closeEvents?.();
    this.closeEvents = null;
  }

  attach(id: number): void {
    this.close();
    const { store, page, deps } = this;
    page.busy(`waiting for run ${id}…`);
    let trace: Trace | null = null;
    let shown = false, queued = false, lastRanges = 0, lastTokens = 0, saved = '', lastNode = -1, progress = '';
    let newSteps = false, newTokens = false, finished = -1;   // finished: the newest finished step
    const banner = deps.banner(() => { void deps.cancel(); });
    const onScreen = () => store.get().trace === trace;
    const flush = () => {
      queued = false;
      if (!trace || !shown || !onScreen()) return;
      const now = deps.now();
      if (newSteps) { newSteps = false; page.stepsGrew(trace.steps.length); }
      // Following the run shows the newest finished step: a step's nodes are reported after it
      // ran, so the running step would be blank (or half lit, on a fast model).
      const s = store.get();
      if (s.follow && finished >= 0 && finished !== s.step) redrawStep(store, finished);
      if (newTokens && now - lastTokens > TOKENS_EVERY_MS) {
        newTokens = false; lastTokens = now;
        page.tokensChanged(trace);
      } else if (newTokens) schedule();
      const clearRanges = now - lastRanges > RANGES_EVERY_MS;
      if (clearRanges) lastRanges = now;
      page.recolour(clearRanges, lastNode >= 0 ? (trace.complete ? [] : [lastNode]) : null);
      banner.progress(progress);
    };
    const schedule = () => { if (!queued) { queued = true; deps.frame(flush); } };
    const failed = (msg: string) => { banner.failed(msg); deps.marks.live = 'error'; };
    this.closeEvents = deps.events(id, (type, d) => {
      if (type === 'start') { trace = liveTrace(d as unknown as LiveStart); saved = String(d.trace); deps.marks.live = 'running'; return; }
      if (!trace) return;
      if (shown && !onScreen()) return;   // the user opened something else
      switch (type) {
        case 'graph':
          applyGraph(trace, d);
          if (!shown) {
            shown = true;
            store.set({ follow: true });
            page.show({ trace, traceB: null, cmp: null, source: { trace: null, a: null, b: null } }, banner.root);
          }
          break;
        case 'step': {
          const s = applyStep(trace, d);
          newSteps = true;
          progress = `run ${id} → ${saved}: step ${s.index} (${s.phase}, ${s.tokens.length} token(s) in)`;
          deps.marks.liveStep = String(s.index);
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
          finished = Number(d.step);
          break;
        case 'done': {
          trace.complete = true;
          newTokens = true; lastTokens = 0;
          // A run cancelled before its first step saves no trace ("trace": null).
          if (d.trace === null) saved = '';
          const msg = `${d.cancelled ? 'Cancelled' : 'Done'}: ${d.steps} step(s), ${d.generated} token(s) generated; ${saved ? `saved as ${saved}` : 'no trace saved'}`;
          progress = msg;
          // The banner offers to compare the saved trace with the others of the list.
          deps.list().then((list) => banner.done(msg, saved, list.filter((e) => !e.error && e.name !== saved)))
            .catch(() => banner.done(msg, saved, []))
            .finally(() => { deps.marks.live = 'done'; });
          break;
        }
        case 'error':
          failed(String(d.message));
          return;
      }
      schedule();
    }, failed);
  }
}
