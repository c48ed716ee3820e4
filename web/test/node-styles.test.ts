// What restyle paints: a colour and a label per node for the chosen metric, token ids and
// positions without colour, and a legend key that changes with the metric's range only.
import { describe, expect, it } from 'vitest';
import { parseTrace } from '../src/model/parse';
import { NodeColouring, valueText } from '../src/views/node-styles';
import { makeV2Trace } from './fixtures/make-fixtures';

describe('node styles', () => {
  const t = parseTrace(makeV2Trace({ decodeSteps: 2 }), 'a.json');
  const g = t.graphs.get(t.steps[1].graphId)!;

  it('colours recorded nodes and labels them with the metric', () => {
    const { styles } = new NodeColouring().paint(t, 1, g, 'absmax', null);
    expect(styles.size).toBe(g.nodes.length);
    const q = g.nodes.find((n) => n.name === 'blk.0.attn_q')!;
    expect(styles.get(q.id)!.fill).toMatch(/^(rgb|#)/);
    expect(styles.get(q.id)!.text).toMatch(/^max\|x\| /);
    for (const n of g.nodes.filter((x) => x.dtype === 'i32')) expect(styles.get(n.id)).toMatchObject({ fill: null, noOutput: false });
    const fused = g.nodes.find((n) => t.steps[1].records.get(n.id)?.noOutput === 'fused');
    if (fused) expect(styles.get(fused.id)).toMatchObject({ fill: null, text: '(fused)', noOutput: true });
  });

  it('keeps a metric\'s range until cleared', () => {
    const c = new NodeColouring();
    const first = c.paint(t, 1, g, 'absmean', null).legendKey;
    expect(first).toMatch(/^absmean\|/);
    // Other data (here another trace) keeps the cached range until clear().
    const other = parseTrace(makeV2Trace({ decodeSteps: 2, seed: 9, embd: 128 }), 'b.json');
    const og = other.graphs.get(other.steps[1].graphId)!;
    expect(c.paint(other, 1, og, 'absmean', null).legendKey).toBe(first);
    c.clear();
    expect(c.paint(other, 1, og, 'absmean', null).legendKey).not.toBe(first);
  });

  it('labels values with their units', () => {
    expect(valueText('time', 12)).toMatch(/µs/);
    expect(valueText('roof', 0.05)).toBe('5.0 % of roof');
    expect(valueText('error', 250)).toBe('identical');
    expect(valueText('error', 31.26)).toBe('31.3 dB');
    expect(valueText('cosine', 0.5)).toBe('cos 0.50000');
    expect(valueText('nonfinite', 0)).toBe('finite');
    expect(valueText('nonfinite', 3)).toBe('3 NaN/Inf');
    expect(valueText('absmean', 1.5)).toMatch(/^mean\|x\| /);
  });
});
