// Loads what the page shows and hands it over in one shape (Loaded), whatever it came from: a
// server trace (sliced when large: the first step now, the rest in the background), two traces
// and their comparison, a paired trace (shown as the comparison of its two runs), a local file.
// Failures are thrown as Errors whose message names the file; the page shows them as they are.
import { defaultReference, type Comparison } from '../model/compare';
import { TraceError } from '../model/errors';
import { isPaired, pairedComparison, referenceTrace } from '../model/paired';
import { parseTraceText } from '../model/parse';
import { applyVocabulary, idsWithoutText } from '../model/parse-v1';
import type { Trace } from '../model/types';
import type { Loaded, TraceSource } from '../state/selection';
import { fetchComparison, fetchTrace, fetchTraceProgressive, listTraces, listedVersion, type ProgressiveTrace, type TraceEntry } from './api';
import { liveModels, vocabTexts, type LiveModels } from './live';
import { readLocalFile } from './read-file';

// The server calls the loader makes (tests give it fakes).
export interface TraceApi {
  fetchTrace(name: string): Promise<Trace>;
  fetchTraceProgressive(name: string, firstStep: number, version: number | null): Promise<ProgressiveTrace>;
  fetchComparison(a: string, b: string, referenceB: boolean): Promise<Comparison>;
  listedVersion(name: string): Promise<number | null>;
  listTraces(): Promise<TraceEntry[]>;
  liveModels(): Promise<LiveModels | null>;
  vocabTexts(model: string, ids: number[]): Promise<Map<number, string> | null>;
}

export const serverApi: TraceApi = { fetchTrace, fetchTraceProgressive, fetchComparison, listedVersion, listTraces, liveModels, vocabTexts };

// A server trace, with the steps a sliced load still has to fetch (null: all are here).
export interface LoadedServerTrace { loaded: Loaded; rest: ((onStep: (k: number) => void) => Promise<void>) | null }

export interface Landing { entries: TraceEntry[] | null; listError: string | null; live: LiveModels | null }

const server = (trace: string): TraceSource => ({ trace, a: null, b: null });

// A paired trace carries both runs: it is shown as A against its reference run.
function asLoaded(trace: Trace, source: TraceSource): Loaded {
  return isPaired(trace) ? { trace, traceB: referenceTrace(trace), cmp: pairedComparison(trace), source }
    : { trace, traceB: null, cmp: null, source };
}

export class TraceLoader {
  // `busy`: what the page says while it waits (the loader knows what it is waiting for).
  constructor(private api: TraceApi = serverApi, private busy: (text: string) => void = () => {}) {}

  // The server's traces and the models it can run; a listing that fails is shown, not thrown.
  async landing(): Promise<Landing> {
    this.busy('loading the trace list…');
    let entries: TraceEntry[] | null = null, listError: string | null = null;
    const models = this.api.liveModels();
    try { entries = await this.api.listTraces(); } catch (e) { listError = (e as Error).message; }
    return { entries, listError, live: await models };
  }

  // `firstStep`: the step to show first (a deep link's), fetched before the others.
  async server(name: string, firstStep: number): Promise<LoadedServerTrace> {
    this.busy(`loading ${name}…`);
    const p = await this.api.fetchTraceProgressive(name, firstStep, await this.api.listedVersion(name));
    if (isPaired(p.trace)) {   // shown as a comparison of its two runs: every step's records first
      this.busy(`loading every step of the paired trace ${name}…`);
      await p.loadRest(() => {});
      return { loaded: asLoaded(p.trace, server(name)), rest: null };
    }
    return { loaded: asLoaded(p.trace, server(name)), rest: p.sliced ? (onStep) => p.loadRest(onStep) : null };
  }

  // The reference (what SQNR is measured against) is the float path by default.
  async comparison(a: string, b: string): Promise<Loaded> {
    this.busy(`loading ${a} and ${b} and their comparison…`);
    const [ta, tb] = await Promise.all([this.api.fetchTrace(a), this.api.fetchTrace(b)]);
    const source = { trace: null, a, b };
    if (a === b && isPaired(ta)) return asLoaded(ta, source);   // a paired trace against itself: A against its reference
    const cmp = await this.api.fetchComparison(a, b, defaultReference(ta.meta.matmulPath, tb.meta.matmulPath) === 'b');
    return { trace: ta, traceB: tb, cmp, source };
  }

  // The comparison of the shown pair measured against `ref`; null when no server pair is shown.
  async reference(source: TraceSource, ref: 'a' | 'b'): Promise<Comparison | null> {
    if (!source.a || !source.b) return null;
    return this.api.fetchComparison(source.a, source.b, ref === 'b');
  }

  async file(f: File): Promise<Loaded> {
    this.busy(`reading ${f.name}…`);
    try {
      return asLoaded(parseTraceText(await readLocalFile(f), f.name), { trace: null, a: null, b: null });
    } catch (e) {
      // A TraceError already starts with the file name.
      throw e instanceof TraceError ? e : new Error(`${f.name}: ${(e as Error).message}`);
    }
  }

  // Version-1 top-k entries have no text: the server's copy of the model (--model) has it.
  // Applied only while `wanted()` (the trace is still shown); true when texts were filled in.
  async vocabulary(trace: Trace, wanted: () => boolean): Promise<boolean> {
    const texts = await this.api.vocabTexts(trace.meta.modelFile, idsWithoutText(trace));
    if (!texts || !wanted()) return false;
    applyVocabulary(trace, texts);
    return true;
  }
}
