// The paired comparison's divergence rule (firstDivergent, identical) on the shared test vectors
// traces/test-vectors/paired-divergence.json; minfer-trace's diff_paired runs the same vectors
// (recorder/tests/test_divergence_vectors.cpp), so the page and the tool cannot part unnoticed.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pairedComparison } from '../src/model/paired';
import { parseTraceText } from '../src/model/parse';

type J = Record<string, any>;   // the vectors are plain JSON, patched as such
const file = fileURLToPath(new URL('../../traces/test-vectors/paired-divergence.json', import.meta.url));
const vectors = JSON.parse(readFileSync(file, 'utf8')) as { base: J; cases: J[] };

// The case's trace: the base with its patches merged (docs in the vector file's "about").
function caseTrace(c: J): J {
  const t = structuredClone(vectors.base);
  for (const [key, patch] of Object.entries(c.cmp ?? {})) {
    const [step, node] = key.split(':').map(Number);
    const r = t.steps[step].nodes.find((x: J) => x.id === node);
    Object.assign(r.cmp, patch);
  }
  for (const [key, patch] of Object.entries(c.compare ?? {})) Object.assign(t.steps[Number(key)].compare, patch);
  for (const [key, id] of Object.entries(c.ref_chosen ?? {})) {
    const l = t.steps[Number(key)].ref_logits;
    l.chosen = l.top[0].id = id;
    l.chosen_text = l.top[0].text = `t${id}`;
  }
  return t;
}

describe('paired divergence rule (shared test vectors)', () => {
  it('has the cases', () => expect(vectors.cases.length).toBeGreaterThanOrEqual(5));
  for (const c of vectors.cases)
    it(c.name, () => {
      const t = parseTraceText(JSON.stringify(caseTrace(c)), `${c.name}.json`);
      const cmp = pairedComparison(t, c.threshold_db);
      expect(cmp.identical).toBe(c.expect.identical);
      expect(cmp.firstDivergent ? [cmp.firstDivergent.step, cmp.firstDivergent.node] : null).toEqual(c.expect.first_divergent);
    });
});
