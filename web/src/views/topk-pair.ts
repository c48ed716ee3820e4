// A and B's next-token distributions side by side for one step: top-k with the raw
// probabilities and, where the trace has them (v3 Logits.sampled), the probabilities the
// sampler drew from (after the repetition penalty and temperature); the chosen token, the
// top-1/top-2 margin, and the sampler settings.
import type { Logits, SamplerSettings, Trace } from '../model/types';
import { el } from '../ui/dom';
import { fmtNum, fmtProb, tokenLabel } from '../ui/format';

const ROWS = 8;

export function samplerText(s: SamplerSettings | null | undefined): string {
  if (!s) return 'sampler settings: not in this trace';
  const greedy = s.temperature === 0;
  return `sampler: ${greedy ? 'greedy (temperature 0)' : `temperature ${fmtNum(s.temperature, 3)}`}, top-k ${s.topK === 0 ? 'off' : fmtNum(s.topK)}, ` +
    `top-p ${fmtNum(s.topP, 3)}, repeat penalty ${fmtNum(s.repeatPenalty, 3)}, seed ${s.seed ?? '—'}`;
}

// p(top1) − p(top2) of the raw distribution.
export function margin(l: Logits | null): number | null {
  return l && l.top.length >= 2 ? l.top[0].p - l.top[1].p : null;
}

function side(label: string, l: Logits | null, recordedMargin: number | null, other: Logits | null): HTMLElement {
  const box = el('div', { class: 'topk-side' }, el('h5', { text: label }));
  if (!l) { box.append(el('p', { class: 'muted', text: 'no logits on this step' })); return box; }
  const sampled = l.sampled ? new Map(l.sampled.top.map((t) => [t.id, t.p])) : null;
  const m = recordedMargin ?? margin(l);
  box.append(el('div', { class: 'topk-summary' },
    el('span', { text: `chosen ${l.chosen === null ? '—' : `“${tokenLabel(l.chosenText ?? `#${l.chosen}`)}”`} (rank ${l.chosenRank ?? '—'})` }),
    el('span', { text: ` · p raw ${fmtProb(l.chosenP)}` }),
    l.sampled ? el('span', { class: 'sampled-p', text: ` · p as sampled ${fmtProb(l.sampled.chosenP)}` }) : null,
    el('span', { class: 'margin', text: ` · margin top1−top2 ${fmtProb(m)}` })));
  const t = el('table', { class: 'topk-table' },
    el('tr', {}, el('th', { text: '#' }), el('th', { text: 'token' }), el('th', { text: 'p raw' }),
      sampled ? el('th', { text: 'p as sampled', title: 'after the repetition penalty and temperature, before top-k/top-p' }) : null,
      el('th', { text: 'in other run' })));
  const otherRank = new Map((other?.top ?? []).map((x, i) => [x.id, i]));
  l.top.slice(0, ROWS).forEach((x, i) => {
    const o = otherRank.get(x.id);
    t.append(el('tr', { class: x.id === l.chosen ? 'chosen' : '' }, el('td', { text: String(i) }), el('td', { class: 'tok', text: tokenLabel(x.text || `#${x.id}`) }),
      el('td', { text: fmtProb(x.p) }), sampled ? el('td', { text: sampled.has(x.id) ? fmtProb(sampled.get(x.id)!) : '—' }) : null,
      el('td', { class: o === undefined ? 'muted' : '', text: o === undefined ? 'not in top-k' : `rank ${o}` })));
  });
  box.append(t);
  return box;
}

export function topkPair(a: Trace, b: Trace, step: number, labels: [string, string], margins: [number | null, number | null]): HTMLElement {
  const la = a.steps[step]?.logits ?? null, lb = b.steps[step]?.logits ?? null;
  const anySampled = !!(la?.sampled || lb?.sampled);
  return el('div', { class: 'topk-pair' },
    el('div', { class: 'sampler-settings', text: samplerText(a.meta.sampler) }),
    el('div', { class: 'muted', text: anySampled ? '“p as sampled”: the distribution the sampler drew from (after the repetition penalty and temperature, before top-k/top-p); “p raw”: softmax of the logits at temperature 1.'
      : 'This trace has no sampled distribution (recorded before version 3): p is the softmax of the raw logits, before the repetition penalty.' }),
    el('div', { class: 'topk-sides' }, side(labels[0], la, margins[0], lb), side(labels[1], lb, margins[1], la)));
}
