// Issue 31, item 7: minfer-viz streams a comparison that takes it more than a second (so that a
// client that leaves stops the work): 200 at once, spaces while it runs, then the JSON; an error
// found after the 200 is the body {"error", "status"}. The page reads both like the normal
// answers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fetchComparison } from '../src/io/api';

afterEach(() => vi.unstubAllGlobals());

const json200 = (text: string) => new Response(text, { status: 200, headers: { 'Content-Type': 'application/json' } });

describe('streamed /api/compare answers', () => {
  it('parses a comparison sent after keep-alive spaces', async () => {
    const cmp = { a: { file: 'a.json', matmul_path: 'mmq' }, b: { file: 'b.json', matmul_path: 'f16' },
      threshold: { metric: 'sqnr_db', value: 30 }, metrics_source: 'grid', first_divergent: null, worst_local: null,
      steps: [{ index: 0, phase: 'prefill', nodes: [] }], steps_compared: 1, token_agreement: 1, identical: true,
      op_times: [], warnings: [] };
    vi.stubGlobal('fetch', async () => json200('   ' + ' '.repeat(40) + JSON.stringify(cmp)));
    const c = await fetchComparison('a.json', 'b.json');
    expect(c.a.file).toBe('a.json');
    expect(c.steps.length).toBe(1);
  });

  it('shows an error sent after the 200 with the status the server gave it', async () => {
    vi.stubGlobal('fetch', async () => json200('    ' + JSON.stringify({
      error: 'cannot compare traces of different models: a.json is x.gguf, b.json is y.gguf', status: 422 })));
    await expect(fetchComparison('a.json', 'b.json')).rejects.toThrow(
      /api\/compare\?a=a\.json&b=b\.json: cannot compare traces of different models.*\(HTTP 422\)/);
  });
});
