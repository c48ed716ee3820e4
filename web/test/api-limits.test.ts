// Issue 31, item 6: the server refuses (413) to slice a trace past its step limit; the page
// must show that message, not fall back to loading the whole file (a 1,000,000-step trace took
// 7.8 s and 609 MB in the page).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fetchTraceProgressive } from '../src/io/api';

afterEach(() => vi.unstubAllGlobals());

describe('sliced loading at the server limit', () => {
  it('reports a 413 from the slice index instead of loading the whole trace', async () => {
    const urls: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      urls.push(url);
      if (url.endsWith('/index'))
        return new Response(JSON.stringify({ error: 'big.json has more than 100000 steps (start minfer-viz with --max-steps N to raise it)' }),
          { status: 413, statusText: 'Payload Too Large', headers: { 'Content-Type': 'application/json' } });
      return new Response('{}', { status: 200 });
    });
    await expect(fetchTraceProgressive('big.json', 0, null)).rejects.toThrow(/more than 100000 steps.*--max-steps/);
    expect(urls).toEqual(['api/slices/big.json/index']);
  });
});
