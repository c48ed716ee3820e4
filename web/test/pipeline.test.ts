import { describe, expect, it } from 'vitest';
import { parseTrace } from '../src/model/parse';
import { LAYER_STAGES, buildPipeline, summarizeStage } from '../src/model/pipeline';
import { makeV1Trace, makeV2Trace } from './fixtures/make-fixtures';

describe('pipeline view model', () => {
  for (const [label, doc, layers] of [
    ['v2', makeV2Trace({ layers: 3, decodeSteps: 2 }), 3],
    ['v2, 5 layers', makeV2Trace({ layers: 5, decodeSteps: 1 }), 5],
    ['v1 upstream names', makeV1Trace({ layers: 3, decodeSteps: 2 }), 3],
  ] as const) {
    it(`derives the stages from the graph (${label})`, () => {
      const t = parseTrace(doc, 'x.json');
      const g = t.graphs.get('decode')!;
      const p = buildPipeline(g);
      expect(p.head.map((s) => s.kind)).toEqual(['input', 'embedding']);
      expect(p.tail.map((s) => s.kind)).toEqual(['final_norm', 'lm_head', 'sampler']);
      expect(p.layers.length).toBe(layers);
      for (const l of p.layers) expect(l.stages.map((s) => s.kind)).toEqual(LAYER_STAGES);
      // every node is in exactly one stage
      expect(p.byNode.size).toBe(g.nodes.length);
      const at = (layer: number, kind: string) => p.layers[layer].stages.find((s) => s.kind === kind)!;
      const names = (layer: number, kind: string) => at(layer, kind).nodes.map((id) => g.nodes[id].name).join(' ');
      expect(names(1, 'attention')).toMatch(/attn_q/);
      expect(names(1, 'attention')).toMatch(/attn_output/);
      expect(names(1, 'ffn')).toMatch(/ffn_down/);
      expect(at(1, 'attn_residual').nodes.length).toBe(1);
      expect(at(1, 'ffn_residual').nodes.length).toBe(1);
      const sum = summarizeStage(g, at(1, 'ffn'), t.steps[1]);
      expect(sum.shape).toEqual([1, 64]);
      expect(sum.weightTypes.sort()).toEqual(['Q6_K', 'Q8_0']);
      expect(sum.absmax).toBeGreaterThan(0);
      expect(sum.ops).toContain('matmul');
    });
  }
});
