// Issue 31, item 2: a trace the server refuses to slice (it lists it as unreadable: a key twice,
// a NUL and junk after the JSON) was read anyway by a hand-written ?trace= link, because the
// page loaded the whole file on any refusal but 413. It now does so only when the server has no
// slices at all (minfer-viz's catch-all 404 for an unknown endpoint, or another server's 404)
// or the trace is version 1 (422 with "version": 1); every other refusal is the page's error.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fetchTraceProgressive } from '../src/io/api';
import { makeUpstreamV1Trace } from './fixtures/make-upstream-v1';

afterEach(() => vi.unstubAllGlobals());

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

// A server whose slice index answers `index()`; the whole file is a version-1 trace (a format
// the page reads without slices), so a fallback shows as a loaded trace.
function serve(index: () => Response | Promise<Response>): string[] {
  const asked: string[] = [];
  vi.stubGlobal('fetch', async (url: string) => {
    asked.push(url);
    if (url.endsWith('/index')) return index();
    return new Response(JSON.stringify(makeUpstreamV1Trace({ layers: 1, decodeSteps: 1 })));
  });
  return asked;
}

describe('a refused slice index', () => {
  it('shows the error of a trace the server cannot read, without reading it whole', async () => {
    const asked = serve(() => json(422, { error: "two-steps.json: not valid JSON (/steps): the key 'steps' appears twice in one object" }));
    await expect(fetchTraceProgressive('two-steps.json', 0, null)).rejects.toThrow(
      /api\/slices\/two-steps\.json\/index: two-steps\.json: not valid JSON.*'steps' appears twice.*\(HTTP 422\)/);
    expect(asked).toEqual(['api/slices/two-steps.json/index']);
  });

  it('shows the slice route\'s own 404 and 400', async () => {
    let asked = serve(() => json(404, { error: "slices: no trace named 'gone.json'" }));
    await expect(fetchTraceProgressive('gone.json', 0, null)).rejects.toThrow(/slices: no trace named 'gone\.json' \(HTTP 404\)/);
    expect(asked).toEqual(['api/slices/gone.json/index']);
    asked = serve(() => json(400, { error: "slices: 'x.txt' is not a trace file name" }));
    await expect(fetchTraceProgressive('x.txt', 0, null)).rejects.toThrow(/not a trace file name \(HTTP 400\)/);
    expect(asked).toEqual(['api/slices/x.txt/index']);
  });

  it('shows a server error that is not JSON', async () => {
    const asked = serve(() => new Response('oops', { status: 500, statusText: 'Internal Server Error' }));
    await expect(fetchTraceProgressive('t.json', 0, null)).rejects.toThrow(/500 Internal Server Error/);
    expect(asked).toEqual(['api/slices/t.json/index']);
  });

  it('reads the file whole from a minfer-viz without slice routes', async () => {
    const asked = serve(() => json(404, { error: 'no such API endpoint: /api/slices/t.json/index' }));
    const p = await fetchTraceProgressive('t.json', 0, null);
    expect(p.sliced).toBe(false);
    expect(asked).toEqual(['api/slices/t.json/index', 'api/traces/t.json']);
  });

  it('reads the file whole from a server with no API of slices (a 404 that is not JSON)', async () => {
    const asked = serve(() => new Response('<h1>Not Found</h1>', { status: 404 }));
    expect((await fetchTraceProgressive('t.json', 0, null)).sliced).toBe(false);
    expect(asked).toEqual(['api/slices/t.json/index', 'api/traces/t.json']);
  });

  it('reads a version-1 trace whole when the listing did not say its version', async () => {
    const asked = serve(() => json(422, { error: 'slices: v1.json is a version-1 trace; per-step slices exist for versions 2 and 3 (load the whole file)', version: 1 }));
    const p = await fetchTraceProgressive('v1.json', 0, null);
    expect(p.sliced).toBe(false);
    expect(p.trace.version).toBe(1);
    expect(asked).toEqual(['api/slices/v1.json/index', 'api/traces/v1.json']);
  });

  it('asks for the whole file when no server answers, which names the problem', async () => {
    vi.stubGlobal('fetch', async () => { throw new TypeError('fetch failed'); });
    await expect(fetchTraceProgressive('t.json', 0, null)).rejects.toThrow(/the server did not answer.*Is minfer-viz running/);
  });
});
