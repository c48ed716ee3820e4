// Trace v3 and the comparison page's model: a paired trace parses with its full-tensor metrics,
// the page's comparison of it names the nodes a plain search over the raw JSON finds, grid
// comparisons keep inputs_agree, the reference can be swapped, self-comparisons say identical,
// the worst-nodes table sorts and filters like a brute-force pass, the landing page picks a valid
// pair. Expected values are recomputed here from the raw fixture JSON, not by the code under test.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020';
import { parseComparison, swapSides, defaultReference } from '../src/model/compare';
import { compareMetric } from '../src/model/metrics';
import { pairedComparison, referenceTrace } from '../src/model/paired';
import { parseTrace } from '../src/model/parse';
import { defaultPair, noPairReason, pairProblem } from '../src/model/pairing';
import { filterRows, nodeRows, sortRows } from '../src/model/worst-nodes';
import { errorFill, toDb } from '../src/views/error-scale';
import { makeComparison, makePairedTrace, makeV2Trace } from './fixtures/make-fixtures';

type RawRec = { id: number; cmp?: { sqnr_db: number; rel_l2: number | null; cosine: number; local: { sqnr_db: number } }; stats?: Record<string, number>;
                ref?: { stats: Record<string, number> }; outliers?: { row: number; col: number; value: number; ref_value: number }[];
                act_scales?: { min: number; max: number; mean: number; blocks: number } };
type RawStep = { index: number; graph: string; nodes: RawRec[]; logits: { chosen: number; sampled: { chosen_p: number } }; ref_logits: { chosen: number };
                 compare: { kl: number; margin_a: number } };

const raw = makePairedTrace({ decodeSteps: 3 });
const steps = raw.steps as unknown as RawStep[];
const t = parseTrace(JSON.parse(JSON.stringify(raw)), 'paired.json');
const nodeName = (graph: string, id: number) => raw.graphs.find((g) => g.id === graph)!.nodes[id].name;

describe('version 3: paired trace', () => {
  it('parses meta.compare, per-node cmp/ref/outliers/act_scales and per-step ref_logits/compare/sampled', () => {
    expect(t.version).toBe(3);
    expect(t.meta.compare).toMatchObject({ path: 'f32', mode: 'lockstep', tolerance: { abs: 1e-3, rel: 1e-2 }, local: true });
    expect(t.meta.sampler?.repeatPenalty).toBe(1.1);
    for (const s of steps) {
      const ps = t.steps[s.index];
      expect(ps.refLogits!.chosen).toBe(s.ref_logits.chosen);
      expect(ps.compare!.kl).toBe(s.compare.kl);
      expect(ps.logits!.sampled!.chosenP).toBe(s.logits.sampled.chosen_p);
      for (const r of s.nodes) {
        const pr = ps.records.get(r.id)!;
        if (!r.cmp) { expect(pr.cmp ?? null).toBeNull(); continue; }
        expect(pr.cmp!.sqnrDb).toBe(r.cmp.sqnr_db);
        expect(pr.cmp!.local!.sqnrDb).toBe(r.cmp.local.sqnr_db);
        expect(pr.ref!.stats!.absmean).toBe(r.ref!.stats.absmean);
        expect(pr.outliers!.map((o) => [o.row, o.col, o.value, o.refValue])).toEqual(r.outliers!.map((o) => [o.row, o.col, o.value, o.ref_value]));
        if (r.act_scales) expect(pr.actScales).toMatchObject({ min: r.act_scales.min, max: r.act_scales.max, blocks: r.act_scales.blocks, blockSize: 32 });
      }
    }
  });

  it('has self-consistent fixture metrics: SQNR = −20·log10(relative L2 error), outliers sorted by |x|', () => {
    for (const s of steps)
      for (const r of s.nodes) {
        if (!r.cmp || r.cmp.rel_l2 === null || r.cmp.rel_l2 === 0) continue;
        expect(r.cmp.sqnr_db).toBeCloseTo(-20 * Math.log10(r.cmp.rel_l2), 3);
        const abs = r.outliers!.map((o) => Math.abs(o.value));
        expect(abs).toEqual([...abs].sort((a, b) => b - a));
        expect(abs[0]).toBeCloseTo(Math.max(Math.abs(r.stats!.min), Math.abs(r.stats!.max)), 4);
      }
  });

  it('names the first node under the threshold and the first that adds error, as a plain search finds them', () => {
    const cmp = pairedComparison(t);
    let first: [number, string] | null = null, firstLocal: [number, string, number] | null = null;
    for (const s of steps)
      for (const r of [...s.nodes].sort((a, b) => a.id - b.id)) {
        if (!r.cmp) continue;
        if (!first && r.cmp.sqnr_db < 30) first = [s.index, nodeName(s.graph, r.id)];
        if (!firstLocal && r.cmp.local.sqnr_db < 30) firstLocal = [s.index, nodeName(s.graph, r.id), r.cmp.local.sqnr_db];
      }
    expect(firstLocal).not.toBeNull();
    expect([cmp.firstDivergent!.step, cmp.firstDivergent!.name]).toEqual(first);
    expect([cmp.firstLocal!.step, cmp.firstLocal!.name, cmp.firstLocal!.localDb]).toEqual(firstLocal);
    expect(cmp.firstLocal!.name).toBe('blk.1.ffn_down');   // the fixture's saturating matmul
    // Where error enters (first local SQNR under the 200 dB cap) and the most local error.
    const own = steps.flatMap((s) => [...s.nodes].sort((a, b) => a.id - b.id).filter((r) => r.cmp && r.cmp.local.sqnr_db < 200)
      .map((r) => [s.index, nodeName(s.graph, r.id), r.cmp!.local.sqnr_db] as [number, string, number]));
    expect([cmp.firstOwnError!.step, cmp.firstOwnError!.name, cmp.firstOwnError!.localDb]).toEqual(own[0]);
    const minLocal = Math.min(...own.map((o) => o[2]));
    expect([cmp.worstLocal!.step, cmp.worstLocal!.name, cmp.worstLocal!.localDb]).toEqual(own.find((o) => o[2] === minLocal));
    expect(cmp.metricsSource).toBe('full');
    expect(cmp.identical).toBe(false);
    expect(cmp.steps.every((s) => s.inputsAgree)).toBe(true);   // lockstep: the same tokens
    const agree = steps.filter((s) => s.logits.chosen === s.ref_logits.chosen).length / steps.length;
    expect(cmp.tokenAgreement).toBeCloseTo(agree, 12);
  });

  it('shows B as a trace of its own: its summaries and its logits', () => {
    const b = referenceTrace(t);
    expect(b.meta.matmulPath).toBe('f32');
    const r = steps[1].nodes.find((x) => x.ref)!;
    expect(b.steps[1].records.get(r.id)!.stats!.max).toBe(r.ref!.stats.max);
    expect(b.steps[2].logits!.chosen).toBe(steps[2].ref_logits.chosen);
  });

  it('reads v3 kernel and step fields of CUDA traces', () => {
    const doc = JSON.parse(JSON.stringify(makeV2Trace({ backend: 'cuda', decodeSteps: 1 })));
    doc.version = 3;
    doc.meta.cupti = { enabled: true, reason: null, steps: '0-4', other_steps: 'events' };
    Object.assign(doc.steps[1], { gpu_ms: 1.5, gpu_busy_ms: 1.2, idle_ms: 0.3, host_ms: 2.0, kernels_dropped: 0, kernels_note: null });
    doc.steps[1].kernels[0] = { ...doc.steps[1].kernels[0], node: -1, unattributed: 'memcpy before the graph', graph_node: 7 };
    doc.steps[1].nodes[3].gpu_us = 12.5;
    const c = parseTrace(doc, 'cuda3.json');
    expect(c.meta.cupti).toEqual({ enabled: true, reason: null, steps: '0-4', otherSteps: 'events' });
    expect(c.steps[1]).toMatchObject({ gpuMs: 1.5, gpuBusyMs: 1.2, idleMs: 0.3, hostMs: 2.0, kernelsDropped: 0, kernelsNote: null });
    expect(c.steps[1].kernels[0]).toMatchObject({ node: -1, unattributed: 'memcpy before the graph', graphNode: 7 });
    expect(c.steps[1].records.get(doc.steps[1].nodes[3].id)!.gpuUs).toBe(12.5);
  });

  it('names the field of a malformed v3 record', () => {
    const bad = JSON.parse(JSON.stringify(raw));
    const i = bad.steps[1].nodes.findIndex((r: RawRec) => r.cmp);
    bad.steps[1].nodes[i].cmp.max_abs_at = [1];
    expect(() => parseTrace(bad, 'bad.json')).toThrow(new RegExp(`steps\\[1\\]\\.nodes\\[${i}\\]\\.cmp\\.max_abs_at: expected \\[row, col\\]`));
  });

  const schemaFile = new URL('../../traces/schema/minfer-trace-v3.schema.json', import.meta.url);
  it.skipIf(!existsSync(schemaFile))('the paired fixture validates against the v3 schema', () => {
    const validate = new Ajv2020({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
    expect(validate(raw), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
  });
});

describe('two-trace comparison', () => {
  const a = makeV2Trace({ decodeSteps: 5 }), b = makeV2Trace({ decodeSteps: 5, matmulPath: 'f16', noise: 0.02 });
  const json = makeComparison(a, b, ['a.json', 'b.json']);
  const cmp = parseComparison(json, 'cmp');
  it('keeps inputs_agree and never names a divergence from a step whose inputs differ', () => {
    const differ = a.steps.findIndex((s, i) => JSON.stringify(s.tokens) !== JSON.stringify(b.steps[i].tokens));
    expect(differ).toBeGreaterThan(0);   // the fixture pair parts: the test has something to check
    cmp.steps.forEach((s, i) => expect(s.inputsAgree).toBe(i < differ));
    expect(cmp.firstDivergent!.step).toBeLessThan(differ);
    expect(cmp.metricsSource).toBe('grid');
  });
  it('swaps sides when B is the reference', () => {
    const sw = parseComparison(json, 'cmp', true);
    expect(sw.reference).toBe('b');
    expect(sw.a.file).toBe('b.json');
    expect(sw.steps[2].tokenA).toBe(json.steps[2].token_b);
    expect(swapSides(sw).steps[2].tokenA).toBe(json.steps[2].token_a);
    expect(defaultReference('mmq', 'f16')).toBe('b');
    expect(defaultReference('f32', 'mmq')).toBe('a');
  });
  it('calls a self-comparison identical and names nothing', () => {
    const same = parseComparison(makeComparison(a, a, ['a.json', 'a.json']), 'same');
    expect(same.identical).toBe(true);
    expect(same.firstDivergent).toBeNull();
    const v3 = parseComparison({ ...json, identical: true, first_divergent: null }, 'v3');
    expect(v3.identical).toBe(true);
  });
  it('derives the relative error of a grid comparison from SQNR (the same reference)', () => {
    const n = [...cmp.steps[1].nodes.values()].find((x) => x.sqnrDb !== null && Number.isFinite(x.sqnrDb))!;
    expect(compareMetric('relerr', n)).toBeCloseTo(10 ** (-n.sqnrDb! / 20), 12);
    expect(compareMetric('local', n)).toBeNull();
  });
});

describe('worst-nodes table', () => {
  const cmp = pairedComparison(t);
  const graphOf = (i: number) => t.graphs.get(t.steps[i].graphId)!;
  const rows = nodeRows(cmp, graphOf);
  it('has one row per compared node-step', () => {
    expect(rows.length).toBe(steps.reduce((n, s) => n + s.nodes.filter((r) => r.cmp).length, 0));
  });
  it('sorts worst first like a brute-force minimum, missing values last', () => {
    const byLocal = sortRows(rows, 'localDb', 'asc');
    const min = Math.min(...steps.flatMap((s) => s.nodes.filter((r) => r.cmp).map((r) => r.cmp!.local.sqnr_db)));
    expect(byLocal[0].localDb).toBe(min);
    const byRel = sortRows(rows, 'relL2', 'desc');
    for (let i = 1; i < byRel.length; i++) if (byRel[i].relL2 !== null) expect(byRel[i - 1].relL2!).toBeGreaterThanOrEqual(byRel[i].relL2!);
  });
  it('filters by op and weight type', () => {
    const mm = filterRows(rows, { op: 'matmul', weightType: 'Q6_K', includeInputsDiffer: false });
    expect(mm.length).toBe(steps.length * 4);   // one Q6_K ffn_down per layer, 4 layers
    expect(mm.every((r) => r.op === 'matmul' && /ffn_down/.test(r.name))).toBe(true);
  });
});

describe('error colour scale', () => {
  it('separates 20, 25, 30, 35 and 40 dB, and places rel / cosine on the dB ramp', () => {
    const cs = [20, 25, 30, 35, 40].map((d) => errorFill('db', d));
    expect(new Set(cs).size).toBe(5);
    expect(toDb('rel', 0.01)).toBeCloseTo(40, 12);
    expect(errorFill('rel', 10 ** (-25 / 20))).toBe(errorFill('db', 25));
    expect(toDb('cos', 1 - 0.5e-3)).toBeCloseTo(30, 9);
    expect(errorFill('db', 200)).not.toBe(errorFill('db', 60));   // identical has its own colour
  });
});

describe('landing page pair', () => {
  const list = [
    { name: 'demo.json', model: 'q.gguf', model_sha256: 'aa', prompt: 'What does', matmul_path: 'mmq' },
    { name: 'q-f16.json.gz', model: 'q.gguf', model_sha256: 'aa', prompt: 'Why is', matmul_path: 'f16' },
    { name: 'q-mmq.json.gz', model: 'q.gguf', model_sha256: 'aa', prompt: 'Why is', matmul_path: 'mmq' },
    { name: 'tiny.json', model: 't.gguf', model_sha256: 'bb', prompt: 'Why is', matmul_path: 'f16' },
  ];
  it('picks the mmq/float pair of the same model and prompt, not the first mmq of the model', () => {
    expect(defaultPair(list)).toEqual([2, 1]);
    expect(pairProblem(list[0], list[1])).toMatch(/different prompts/);
    expect(pairProblem(list[1], list[3])).toMatch(/different models/);
    expect(pairProblem(list[2], list[1])).toBeNull();
  });
  it('explains why no pair exists', () => {
    expect(defaultPair([list[0], list[1], list[3]])).toBeNull();
    expect(noPairReason([list[0], list[1], list[3]])).toMatch(/q\.gguf: 2 traces with 2 different prompts/);
    expect(noPairReason([list[0], list[3]])).toMatch(/No two traces share a model/);
  });
});
