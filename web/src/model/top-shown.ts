// The part of a step's top-k the page draws: the first `limit` tokens, and the chosen token
// when it ranks below them. A trace may hold up to 100,000 per step (--trace-topk); drawing
// them all took 31-51 s per step. The rest is summed into one line.
import type { Logits, TopToken } from './types';

export const MAX_TOP_BARS = 50;

export interface TopShown { shown: TopToken[]; restCount: number; restP: number }

export function topShown(l: Logits, limit = MAX_TOP_BARS): TopShown {
  const shown = l.top.slice(0, limit);
  let restCount = 0, restP = 0;
  for (let i = limit; i < l.top.length; ++i) {
    const t = l.top[i];
    if (t.id === l.chosen) shown.push(t);
    else { restCount++; restP += t.p; }
  }
  return { shown, restCount, restP };
}
