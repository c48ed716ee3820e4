// A version-1 trace on the server has no slices (minfer-viz answers 422): the page reads the
// version from the listing and fetches the file whole without asking, so no request fails.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fetchTraceProgressive, listedVersion } from '../src/io/api';
import { makeUpstreamV1Trace } from './fixtures/make-upstream-v1';

const body = JSON.stringify(makeUpstreamV1Trace({ layers: 2, decodeSteps: 1 }));
const listing = [{ name: 'upstream-v1.json', size: body.length, version: 1 }, { name: 'run.json', size: 10, version: 3 }];

function serve(): string[] {
  const asked: string[] = [];
  vi.stubGlobal('fetch', async (url: string) => {
    asked.push(url);
    if (url === 'api/traces') return new Response(JSON.stringify(listing));
    if (url === 'api/traces/upstream-v1.json') return new Response(body);
    return new Response(JSON.stringify({ error: 'slices: a version-1 file has no slices' }), { status: 422 });
  });
  return asked;
}

afterEach(() => { vi.unstubAllGlobals(); });

describe('loading a version-1 trace from the server', () => {
  it('reads the version from the listing', async () => {
    serve();
    expect(await listedVersion('upstream-v1.json')).toBe(1);
    expect(await listedVersion('run.json')).toBe(3);
    expect(await listedVersion('gone.json')).toBeNull();
  });
  it('fetches a version-1 file whole, without asking for slices', async () => {
    const asked = serve();
    const p = await fetchTraceProgressive('upstream-v1.json', 0, 1);
    expect(p.sliced).toBe(false);
    expect(p.trace.version).toBe(1);
    expect(asked).toEqual(['api/traces/upstream-v1.json']);
  });
  it('says in the page how to get the top-k texts the file lacks', async () => {
    serve();
    const { trace } = await fetchTraceProgressive('upstream-v1.json', 0, 1);
    expect(trace.warnings.join(' ')).toMatch(/no vocabulary for this model \(start minfer-viz with --model qwen2\.5-0\.5b-instruct-q8_0\.gguf/);
  });
});
