// Client of the minfer-viz JSON API (viz-server/). Errors carry the server's message.
import { parseComparison, type Comparison } from '../model/compare';
import { parseTraceText } from '../model/parse';
import { fillStepSlice } from '../model/parse-v2';
import type { Trace } from '../model/types';
import { bytesToText } from './read-file';

export interface TraceEntry {
  name: string; size: number; model?: string; architecture?: string; backend?: string; matmul_path?: string;
  steps?: number; tokens?: number; recorded_at?: string; error?: string;
  model_sha256?: string; prompt?: string; version?: number; compare_path?: string;   // compare_path: a paired trace
}

async function get(url: string): Promise<Response> {
  let r: Response;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new Error(`${url}: the server did not answer (${(e as Error).message}). Is minfer-viz running?`);
  }
  if (!r.ok) throw await failure(url, r);
  return r;
}

// The error of a failed answer, with the server's message when it sent one.
async function failure(url: string, r: Response): Promise<Error> {
  let msg = `${r.status} ${r.statusText}`;
  try {
    const body = await r.json();
    if (body && typeof body.error === 'string') msg = `${body.error} (HTTP ${r.status})`;
  } catch { /* not JSON: keep the status line */ }
  return new Error(`${url}: ${msg}`);
}

export async function listTraces(): Promise<TraceEntry[]> {
  const body = await (await get('api/traces')).json();
  if (!Array.isArray(body)) throw new Error('api/traces: expected a list of traces');
  return body as TraceEntry[];
}

// The file version the server's listing gives for a trace (null: not listed, or no listing).
export async function listedVersion(name: string): Promise<number | null> {
  try {
    return (await listTraces()).find((e) => e.name === name)?.version ?? null;
  } catch {
    return null;
  }
}

export async function fetchTrace(name: string): Promise<Trace> {
  const r = await get(`api/traces/${encodeURIComponent(name)}`);
  const text = await bytesToText(await r.arrayBuffer());
  performance.mark('minfer:fetched');
  const trace = parseTraceText(text, name);
  performance.mark('minfer:parsed');
  return trace;
}

// `referenceB`: measure against B (the server measures against its first trace, so it is asked
// for (b, a) and the sides are swapped back). A comparison that takes the server more than a
// second is answered 200 at once and streamed (spaces until it is ready, which JSON allows), so
// an error found later comes as a 200 body {"error", "status"}: it reads like an error answer.
export async function fetchComparison(a: string, b: string, referenceB = false): Promise<Comparison> {
  const [x, y] = referenceB ? [b, a] : [a, b];
  const url = `api/compare?a=${encodeURIComponent(x)}&b=${encodeURIComponent(y)}`;
  const body = await (await get(url)).json();
  if (body && typeof body === 'object' && typeof body.error === 'string')
    throw new Error(`${url}: ${body.error} (HTTP ${typeof body.status === 'number' ? body.status : 200})`);
  return parseComparison(body, `comparison of ${a} and ${b}`, referenceB);
}

// Sliced loading (large traces): the index (everything but the per-step node records) and the
// first step to show, so the page paints at once; loadRest() then fetches the other steps in
// the background. A version-1 file has no slices: it is fetched whole without asking, so the
// page logs no failed request; so is any trace when the server has no slices at all
// (offersNoSlices). Any other refusal of the index is shown, never worked around by reading the
// file whole: the server refuses the slices of a trace it lists as unreadable (a key twice,
// bytes after the JSON), and 413 means the whole file would be worse.
export interface ProgressiveTrace { trace: Trace; sliced: boolean; loadRest(onStep: (k: number) => void): Promise<void> }

// Whether a refused slice index means "no slices here: read the file whole". minfer-viz without
// the slice routes answers its catch-all 404 ("no such API endpoint: ..."; every answer of the
// slice route starts "slices:"), another server a 404 of its own; a version-1 trace has no
// slices (422 with "version": 1, for a page that did not know the version from the listing).
async function offersNoSlices(r: Response): Promise<boolean> {
  let body: { error?: unknown; version?: unknown } | null = null;
  try { body = await r.clone().json(); } catch { /* not JSON: not the slice route's answer */ }
  if (r.status === 404) return !(typeof body?.error === 'string' && body.error.startsWith('slices:'));
  return r.status === 422 && body?.version === 1;
}

export async function fetchTraceProgressive(name: string, firstStep: number, version: number | null): Promise<ProgressiveTrace> {
  const whole = async (): Promise<ProgressiveTrace> => ({ trace: await fetchTrace(name), sliced: false, loadRest: async () => {} });
  if (version === 1) return whole();
  const base = `api/slices/${encodeURIComponent(name)}`;
  let r: Response | null = null;
  try { r = await fetch(`${base}/index`); } catch { r = null; }
  // No answer at all: the whole file's request says so ("Is minfer-viz running?").
  if (!r) return whole();
  if (!r.ok) {
    if (await offersNoSlices(r)) return whole();
    throw await failure(`${base}/index`, r);
  }
  const trace = parseTraceText(await r.text(), name);
  performance.mark('minfer:fetched');
  const first = Math.max(0, Math.min(trace.steps.length - 1, firstStep));
  const fetchStep = async (k: number) => {
    const body = await (await get(`${base}/steps/${k}`)).json();
    fillStepSlice(trace, body, `${name} step ${k}`);
  };
  if (trace.steps[first]?.pending) await fetchStep(first);
  performance.mark('minfer:parsed');
  return {
    trace, sliced: true,
    async loadRest(onStep) {
      // Nearest steps first (the user is likely to move there), a few requests in flight.
      const order = trace.steps.filter((s) => s.pending).map((s) => s.index).sort((a, b) => Math.abs(a - first) - Math.abs(b - first));
      let next = 0;
      const worker = async () => {
        while (next < order.length) {
          const k = order[next++];
          await fetchStep(k);
          onStep(k);
        }
      };
      await Promise.all([worker(), worker(), worker()]);
      performance.mark('minfer:all-steps-loaded');
    },
  };
}
