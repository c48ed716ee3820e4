// The recorded sample traces in traces/ (when present): each validates against the schema and
// parses into the model with its steps, graphs and logits.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020';
import { parseTraceText } from '../src/model/parse';
import { isPaired, pairedComparison } from '../src/model/paired';

const dir = fileURLToPath(new URL('../../traces', import.meta.url));
const files = existsSync(dir) ? readdirSync(dir).filter((f) => /\.json(\.gz)?$/.test(f)) : [];
if (files.length === 0) console.log(`SKIP real-trace checks: no *.json / *.json.gz traces in ${dir}`);

describe.skipIf(files.length === 0)('recorded traces', () => {
  const compile = (v: number) => {
    const f = join(dir, `schema/minfer-trace-v${v}.schema.json`);
    return existsSync(f) ? new Ajv2020({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(f, 'utf8'))) : null;
  };
  const validators: Record<number, ReturnType<typeof compile>> = { 2: compile(2), 3: compile(3) };
  for (const f of files) {
    it(`${f} validates and parses`, () => {
      const raw = readFileSync(join(dir, f));
      const text = f.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
      const json = JSON.parse(text);
      const validate = validators[json.version];
      if (validate) expect(validate(json), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
      const t = parseTraceText(text, f);
      expect(t.steps.length).toBeGreaterThan(0);
      const g = t.graphs.get(t.steps[0].graphId)!;
      expect(g.nodes.length).toBeGreaterThan(10);
      const recorded = [...t.steps[0].records.values()].filter((r) => r.stats);
      expect(recorded.length).toBeGreaterThan(0);
      expect(recorded.every((r) => Number.isFinite(r.stats!.absmean) || r.stats!.nan + r.stats!.inf > 0)).toBe(true);
      if (isPaired(t)) {
        // A paired recording: every output node carries full-tensor metrics, and the page's
        // "first node that adds error" is the first whose recorded local SQNR is under 30 dB.
        // Where error first enters (the first local SQNR under the 200 dB cap) and the node that adds
        // the most (the lowest local SQNR, the first of equals) are found the same way.
        const cmp = pairedComparison(t);
        let first: string | null = null, own: string | null = null, worst: [string, number] | null = null;
        for (const s of json.steps)
          for (const r of s.nodes ?? []) {
            const l = r.cmp?.local?.sqnr_db;
            if (typeof l !== 'number' || l >= 200) continue;
            if (!first && l < 30) first = `${s.index}:${r.id}`;
            own ??= `${s.index}:${r.id}`;
            if (!worst || l < worst[1]) worst = [`${s.index}:${r.id}`, l];
          }
        const at = (x: { step: number; node: number } | null) => (x ? `${x.step}:${x.node}` : null);
        expect(at(cmp.firstLocal)).toBe(first);
        expect(at(cmp.firstOwnError)).toBe(own);
        expect(cmp.worstLocal ? [at(cmp.worstLocal), cmp.worstLocal.localDb] : null).toEqual(worst);
        expect(recorded.filter((r) => r.cmp).length).toBeGreaterThan(0);
        expect(t.steps.every((s) => s.refLogits)).toBe(true);
      }
    });
  }
});
