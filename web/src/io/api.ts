// Client of the minfer-viz JSON API (viz-server/). Errors carry the server's message.
import { parseComparison, type Comparison } from '../model/compare';
import { parseTraceText } from '../model/parse';
import type { Trace } from '../model/types';
import { bytesToText } from './read-file';

export interface TraceEntry {
  name: string; size: number; model?: string; backend?: string; matmul_path?: string;
  steps?: number; tokens?: number; recorded_at?: string; error?: string;
}

async function get(url: string): Promise<Response> {
  let r: Response;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new Error(`${url}: the server did not answer (${(e as Error).message}). Is minfer-viz running?`);
  }
  if (!r.ok) {
    let msg = `${r.status} ${r.statusText}`;
    try {
      const body = await r.json();
      if (body && typeof body.error === 'string') msg = `${body.error} (HTTP ${r.status})`;
    } catch { /* not JSON: keep the status line */ }
    throw new Error(`${url}: ${msg}`);
  }
  return r;
}

export async function listTraces(): Promise<TraceEntry[]> {
  const body = await (await get('api/traces')).json();
  if (!Array.isArray(body)) throw new Error('api/traces: expected a list of traces');
  return body as TraceEntry[];
}

export async function fetchTrace(name: string): Promise<Trace> {
  const r = await get(`api/traces/${encodeURIComponent(name)}`);
  const text = await bytesToText(await r.arrayBuffer());
  performance.mark('minfer:fetched');
  const trace = parseTraceText(text, name);
  performance.mark('minfer:parsed');
  return trace;
}

export async function fetchComparison(a: string, b: string): Promise<Comparison> {
  const url = `api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
  return parseComparison(await (await get(url)).json(), `comparison of ${a} and ${b}`);
}
