// The loader: every source ends as one Loaded shape; failures name the file and say what went
// wrong; what the page says while it waits.
import { describe, expect, it } from 'vitest';
import { parseComparison, type Comparison } from '../src/model/compare';
import { parseTrace } from '../src/model/parse';
import { idsWithoutText } from '../src/model/parse-v1';
import type { Trace } from '../src/model/types';
import { TraceLoader, type TraceApi } from '../src/io/trace-loader';
import { makeComparison, makePairedTrace, makeV1Trace, makeV2Trace } from './fixtures/make-fixtures';

// Small traces: the suite runs beside a build on two cores.
const a = makeV2Trace({ decodeSteps: 2, layers: 2 }), b = makeV2Trace({ decodeSteps: 2, layers: 2, matmulPath: 'f16', noise: 0.02 });
const paired = makePairedTrace({ decodeSteps: 2, layers: 2 });
const docs: Record<string, unknown> = { 'a.json': a, 'b.json': b, 'p.json': paired };
const notFound = (name: string) => new Error(`api/traces/${name}: no trace named "${name}" (HTTP 404)`);

// A server with the three traces above; `calls` records what was asked.
function fakeApi(over: Partial<TraceApi> = {}) {
  const calls: string[] = [];
  const get = (name: string): Trace => {
    if (!(name in docs)) throw notFound(name);
    return parseTrace(JSON.parse(JSON.stringify(docs[name])), name);
  };
  const api: TraceApi = {
    async fetchTrace(name) { calls.push(`trace ${name}`); return get(name); },
    async fetchTraceProgressive(name, first, version) {
      calls.push(`progressive ${name} from ${first} v${version}`);
      const trace = get(name);
      return { trace, sliced: name !== 'p.json', loadRest: async (onStep) => { calls.push(`rest ${name}`); onStep(1); } };
    },
    async fetchComparison(x, y, refB): Promise<Comparison> {
      calls.push(`compare ${x} ${y}${refB ? ' ref b' : ''}`);
      return parseComparison(makeComparison(a, b, [x, y]), 'cmp', refB);
    },
    async listedVersion() { return 2; },
    async listTraces() { return [{ name: 'a.json', size: 1 }]; },
    async liveModels() { return null; },
    async vocabTexts() { return null; },
    ...over,
  };
  return { api, calls };
}

function loaderWith(over: Partial<TraceApi> = {}) {
  const { api, calls } = fakeApi(over);
  const busy: string[] = [];
  return { loader: new TraceLoader(api, (t) => busy.push(t)), calls, busy };
}

describe('trace loader', () => {
  it('a server trace: sliced, the rest fetched on demand from the wanted step', async () => {
    const { loader, calls, busy } = loaderWith();
    const { loaded, rest } = await loader.server('a.json', 2);
    expect(loaded).toMatchObject({ traceB: null, cmp: null, source: { trace: 'a.json', a: null, b: null } });
    expect(loaded.trace.name).toBe('a.json');
    expect(busy).toEqual(['loading a.json…']);
    const steps: number[] = [];
    await rest!((k) => steps.push(k));
    expect(steps).toEqual([1]);
    expect(calls).toEqual(['progressive a.json from 2 v2', 'rest a.json']);
  });

  it('a paired trace opens as A against its reference run, every step loaded first', async () => {
    const { loader, calls, busy } = loaderWith();
    const { loaded, rest } = await loader.server('p.json', 0);
    expect(rest).toBeNull();
    expect(loaded.traceB).not.toBeNull();
    expect(loaded.cmp?.metricsSource).toBe('full');
    expect(calls).toContain('rest p.json');
    expect(busy[1]).toMatch(/every step of the paired trace p\.json/);
  });

  it('a pair: both traces and their comparison, measured against the float path', async () => {
    const { loader, calls } = loaderWith();
    const l = await loader.comparison('a.json', 'b.json');
    expect(l.source).toEqual({ trace: null, a: 'a.json', b: 'b.json' });
    expect(l.traceB?.name).toBe('b.json');
    expect(calls.at(-1)).toBe('compare a.json b.json ref b');   // b is the f16 run: the reference
    expect(await loader.reference(l.source, 'a')).not.toBeNull();
    expect(calls.at(-1)).toBe('compare a.json b.json');
    expect(await loader.reference({ trace: 'a.json', a: null, b: null }, 'a')).toBeNull();
  });

  it('a missing trace fails with the server\'s message', async () => {
    const { loader } = loaderWith();
    await expect(loader.server('gone.json', 0)).rejects.toThrow(/no trace named "gone\.json"/);
    await expect(loader.comparison('a.json', 'gone.json')).rejects.toThrow(/gone\.json.*HTTP 404/);
  });

  it('a comparison the server refuses fails with its message', async () => {
    const { loader } = loaderWith({ fetchComparison: async () => { throw new Error('api/compare?a=a.json&b=b.json: the prompts differ (HTTP 422)'); } });
    await expect(loader.comparison('a.json', 'b.json')).rejects.toThrow(/prompts differ \(HTTP 422\)/);
  });

  it('a local file: parsed, paired traces as comparisons, no server name', async () => {
    const { loader, busy } = loaderWith();
    const l = await loader.file(new File([JSON.stringify(a)], 'mine.json'));
    expect(l).toMatchObject({ traceB: null, cmp: null, source: { trace: null, a: null, b: null } });
    expect(busy).toEqual(['reading mine.json…']);
    const p = await loader.file(new File([JSON.stringify(paired)], 'pair.json'));
    expect(p.traceB).not.toBeNull();
  });

  it('a broken local file fails with a message that starts with its name', async () => {
    const { loader } = loaderWith();
    await expect(loader.file(new File(['{"format": "minfer-trace", "vers'], 'cut.json'))).rejects.toThrow(/^cut\.json/);
    await expect(loader.file(new File([JSON.stringify({ format: 'something-else' })], 'other.json'))).rejects.toThrow(/^other\.json/);
    const unreadable = { name: 'gone.json', arrayBuffer: async () => { throw new Error('the file could not be read'); } } as unknown as File;
    await expect(loader.file(unreadable)).rejects.toThrow('gone.json: the file could not be read');
  });

  it('the landing page: a listing that fails is shown, the run panel still offered', async () => {
    const models = { models: [{ name: 'm.gguf', size: 1 }], busy: false, run: null, limits: { max_tokens: 64 } };
    const { loader } = loaderWith({ listTraces: async () => { throw new Error('api/traces: the server did not answer'); }, liveModels: async () => models });
    expect(await loader.landing()).toEqual({ entries: null, listError: 'api/traces: the server did not answer', live: models });
  });

  it('fills a version-1 trace\'s token texts only while it is shown', async () => {
    const doc = JSON.stringify(makeV1Trace({ decodeSteps: 1, layers: 1 }));
    const v1 = () => parseTrace(JSON.parse(doc), 'v1.json');
    const { loader } = loaderWith({ vocabTexts: async (_m, ids) => new Map(ids.map((id) => [id, `tok${id}`])) });
    const shown = v1();
    expect(idsWithoutText(shown).length).toBeGreaterThan(0);
    expect(await loader.vocabulary(shown, () => true)).toBe(true);
    expect(idsWithoutText(shown)).toEqual([]);
    const gone = v1();
    expect(await loader.vocabulary(gone, () => false)).toBe(false);
    expect(idsWithoutText(gone).length).toBeGreaterThan(0);
    const { loader: noModel } = loaderWith();
    expect(await noModel.vocabulary(v1(), () => true)).toBe(false);
  }, 30000);
});
