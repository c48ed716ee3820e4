// Issue 31, item 7: a --trace-topk 100000 trace took 39-51 s to open and 31-33 s per step
// change, every bar drawn. The page draws the first bars (and the chosen token) only.
import { describe, expect, it } from 'vitest';
import { MAX_TOP_BARS, topShown } from '../src/model/top-shown';
import type { Logits } from '../src/model/types';

function logits(k: number, chosen: number): Logits {
  const top = Array.from({ length: k }, (_, i) => ({ id: i, text: `t${i}`, p: 1 / k, logit: null }));
  return { top, entropy: null, chosen, chosenText: `t${chosen}`, chosenP: 1 / k, chosenRank: chosen } as unknown as Logits;
}

describe('the top-k the page draws', () => {
  it('keeps the first bars and the chosen token, and sums the rest', () => {
    const s = topShown(logits(100000, 70000));
    expect(s.shown).toHaveLength(MAX_TOP_BARS + 1);
    expect(s.shown[MAX_TOP_BARS].id).toBe(70000);
    expect(s.restCount).toBe(100000 - MAX_TOP_BARS - 1);
    expect(s.restP).toBeCloseTo(s.restCount / 100000, 9);
    expect(topShown(logits(10, 3)).shown).toHaveLength(10);
  });
});
