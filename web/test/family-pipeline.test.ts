// The other model families' sample traces (traces/qwen3-tiny-*, traces/llama-tiny-*): the
// pipeline keeps qwen3's per-head Q/K norms and llama's rope_normal (with rope_freqs) in the
// attention stage, not as extra RMSNorm stages, and the attention width may differ from n_embd.
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseTraceText } from '../src/model/parse';
import { LAYER_STAGES, buildPipeline, summarizeStage } from '../src/model/pipeline';
import { nodePath } from '../src/model/graph-index';

const sample = (name: string) => fileURLToPath(new URL(`../../traces/${name}`, import.meta.url));
const cases = [
  { file: 'qwen3-tiny-q8_0-mmq.json.gz', arch: 'qwen3', attention: ['attn_q_norm', 'attn_k_norm', 'q_rope', 'k_rope'] },
  { file: 'llama-tiny-q8_0-mmq.json.gz', arch: 'llama', attention: ['q_rope', 'k_rope'] },
].filter((c) => existsSync(sample(c.file)));

describe.skipIf(cases.length === 0)('model families in the pipeline', () => {
  for (const c of cases) {
    it(`${c.arch}: norms and RoPE of the attention stay in the attention stage`, () => {
      const t = parseTraceText(gunzipSync(readFileSync(sample(c.file))).toString('utf8'), c.file);
      expect(t.meta.architecture).toBe(c.arch);
      const g = t.graphs.get('decode')!;
      const p = buildPipeline(g);
      const n_layer = (t.meta.hparams as Record<string, number>).n_layer;
      expect(p.layers.length).toBe(n_layer);
      for (const l of p.layers) expect(l.stages.map((s) => s.kind)).toEqual(LAYER_STAGES);
      const attention = p.layers[1].stages.find((s) => s.kind === 'attention')!;
      const names = attention.nodes.map((id) => g.nodes[id].name);
      for (const n of c.attention) expect(names).toContain(`blk.1.${n}`);
      for (const n of c.attention) expect(nodePath(g.nodes[g.nodes.findIndex((x) => x.name === `blk.1.${n}`)])).toBe('attention');
      expect(summarizeStage(g, attention, t.steps[1]).weightTypes).toEqual(['Q8_0']);  // no norm or rope_freqs F32
    });
  }

  it('qwen3: the attention output is n_head × head_dim wide, not n_embd', () => {
    const c = cases.find((x) => x.arch === 'qwen3');
    if (!c) return;
    const t = parseTraceText(gunzipSync(readFileSync(sample(c.file))).toString('utf8'), c.file);
    const hp = t.meta.hparams as Record<string, number>;
    const g = t.graphs.get('decode')!;
    const attn = g.nodes.find((n) => n.name === 'blk.0.attn')!;
    expect(attn.shape).toEqual([1, hp.n_head * hp.head_dim]);
    expect(hp.n_head * hp.head_dim).not.toBe(hp.n_embd);
  });
});
