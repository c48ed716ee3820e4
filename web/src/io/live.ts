// Client of minfer-viz's live runs (docs/live-runs.md): which models the server can run, start,
// cancel, and the run's Server-Sent Events.
import type { Obj } from '../model/checked';

export interface LiveModels { models: { name: string; size: number }[]; busy: boolean; run: number | null; limits: { max_tokens: number } }
export interface RunRequest {
  model: string; prompt: string; max_tokens: number; temperature: number; top_k: number; top_p: number;
  seed: number; repeat_penalty: number; backend: string; matmul_path: string;
}
export interface RunStarted { id: number; trace: string; events: string }

// null when the server runs without --model (live runs off) or is an older server.
export async function liveModels(): Promise<LiveModels | null> {
  try {
    const r = await fetch('api/run/models', { cache: 'no-store' });
    if (!r.ok) return null;
    return (await r.json()) as LiveModels;
  } catch {
    return null;
  }
}

async function post(url: string, body: unknown): Promise<Obj> {
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body ?? {}) });
  let j: Obj = {};
  try { j = await r.json(); } catch { /* not JSON */ }
  if (!r.ok) throw new Error(typeof j.error === 'string' ? j.error : `${url}: HTTP ${r.status}`);
  return j;
}

export async function startRun(req: RunRequest): Promise<RunStarted> {
  return (await post('api/run', req)) as unknown as RunStarted;
}

export async function cancelRun(): Promise<boolean> {
  return (await post('api/run/cancel', {})).cancelled === true;
}

export type LiveEvent = 'start' | 'graph' | 'step' | 'node' | 'token' | 'step_end' | 'done' | 'error';

// Subscribes to a run's events; returns the function that closes the stream. The stream is
// closed after "done" or "error" (an EventSource would otherwise reconnect and replay).
export function runEvents(id: number, on: (type: LiveEvent, data: Obj) => void, onLost: (msg: string) => void): () => void {
  const es = new EventSource(`api/run/events?id=${id}`);
  let ended = false;
  const types: LiveEvent[] = ['start', 'graph', 'step', 'node', 'token', 'step_end', 'done', 'error'];
  for (const t of types)
    es.addEventListener(t, (e) => {
      on(t, JSON.parse((e as MessageEvent).data) as Obj);
      if (t === 'done' || t === 'error') { ended = true; es.close(); }
    });
  es.onerror = () => { if (!ended) { ended = true; es.close(); onLost('the connection to the server was lost'); } };
  return () => { ended = true; es.close(); };
}

// Token texts for ids from a model the server serves (--model): version-1 traces carry no text
// for their top-k entries. null when the server has no such model.
export async function vocabTexts(model: string, ids: number[]): Promise<Map<number, string> | null> {
  if (!model || ids.length === 0) return null;
  const served = await liveModels();   // ask first: no failed request when the server lacks it
  const name = model.split('/').pop()!;
  if (!served?.models.some((m) => m.name === name)) return null;
  try {
    const r = await fetch(`api/vocab?model=${encodeURIComponent(name)}&ids=${ids.slice(0, 10000).join(',')}`);
    if (!r.ok) return null;
    const j = (await r.json()) as { tokens?: Record<string, string> };
    return new Map(Object.entries(j.tokens ?? {}).map(([k, v]) => [Number(k), v]));
  } catch {
    return null;
  }
}
