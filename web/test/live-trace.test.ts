import { describe, expect, it } from 'vitest';
import { applyGraph, applyNode, applyStep, applyStepEnd, applyToken, liveTrace } from '../src/model/live-trace';
import { Checker } from '../src/model/checked';
import { parseNodeRecord } from '../src/model/parse-v2';
import { buildPipeline } from '../src/model/pipeline';
import { makeV2Trace } from './fixtures/make-fixtures';

// The events of docs/live-runs.md, as the server sends them, build the same model a recorded
// trace gives.
describe('live run events', () => {
  const doc = makeV2Trace({ decodeSteps: 1 });
  it('start → graph → step → node → token → step_end', () => {
    const t = liveTrace({ id: 3, model: 'm.gguf', prompt: 'hi', trace: 'live-m.json', max_tokens: 4, meta: doc.meta as never });
    expect(t.complete).toBe(false);
    expect(t.meta.modelFile).toBe(doc.meta.model.file);
    applyGraph(t, { graph: doc.graphs[0] as never });
    expect(t.graphs.get('prefill')!.nodes.length).toBe(doc.graphs[0].nodes.length);
    expect(() => applyStep(t, { step: 1, phase: 'decode', graph: 'decode', pos: 7, tokens: [] })).toThrow(/no graph "decode"/);
    const s = applyStep(t, { step: 0, phase: 'prefill', graph: 'prefill', pos: 0, tokens: [{ id: 9, text: 'Hello' }] });
    expect(s.tokens).toEqual([{ id: 9, text: 'Hello' }]);
    // A node event is the trace's node record, statistics only, with its step.
    expect(applyNode(t, { step: 0, id: 3, time_us: 12, start_us: 40, stats: { min: -1, max: 2, mean: 0.1, absmean: 0.5, std: 0.7, count: 64, nan: 0, inf: 0 } })).toBe(3);
    applyNode(t, { step: 0, id: 4, no_output: 'kv_store' });
    expect(t.steps[0].records.get(3)!.stats!.max).toBe(2);
    expect(t.steps[0].records.get(3)!.timeUs).toBe(12);
    expect(t.steps[0].records.get(3)!.startUs).toBe(40);
    expect(t.steps[0].records.get(4)!.noOutput).toBe('kv_store');
    // The same record in a trace file reads the same.
    const rec = { id: 3, time_us: 12, start_us: 40, stats: { min: -1, max: 2, mean: 0.1, absmean: 0.5, std: 0.7, count: 64, nan: 0, inf: 0 } };
    expect(t.steps[0].records.get(3)).toEqual(parseNodeRecord(new Checker('file'), rec, 'steps[0].nodes[3]'));
    applyToken(t, { step: 0, id: 42, text: ' I', p: 0.25, top: [{ id: 7, text: 'x', p: 0.5 }, { id: 42, text: ' I', p: 0.25 }] });
    expect(t.steps[0].logits).toMatchObject({ chosen: 42, chosenText: ' I', chosenRank: 1, chosenP: 0.25 });
    applyStepEnd(t, { step: 0, time_ms: 3.5 });
    expect(t.steps[0].timeMs).toBe(3.5);
    // the live graph feeds the pipeline view like a recorded one
    expect(buildPipeline(t.graphs.get('prefill')!).layers.length).toBe(4);
  });
});
