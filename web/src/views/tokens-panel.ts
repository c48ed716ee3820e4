// Tokens: the prompt and the generated tokens as a strip (click → that step), and the current
// step's top-k distribution with probabilities and entropy.
import { barChart } from '../charts/bar-chart';
import { topShown } from '../model/top-shown';
import type { Trace } from '../model/types';
import { clear, el } from '../ui/dom';
import { fmtInt, fmtNats, fmtProb, tokenLabel } from '../ui/format';
import { cachedWidth } from '../ui/measure';

export class TokensPanel {
  readonly root = el('div', { class: 'tokens-panel' });
  private strip = el('div', { class: 'token-strip' });
  private chips: HTMLElement[] = [];
  private chipStep: number[] = [];
  private topk = el('div', { class: 'topk' });

  constructor(private onStep: (i: number) => void) {
    this.root.append(el('h3', { text: 'Tokens — prompt, then one generated token per step (click a token to go to its step)' }), this.strip, this.topk);
  }

  setTrace(t: Trace): void {
    clear(this.strip);
    this.chips = []; this.chipStep = [];
    const add = (text: string, step: number, cls: string, title: string) => {
      const c = el('span', { class: `tok ${cls}`, 'data-step': step, title, text: tokenLabel(text) });
      c.addEventListener('click', () => this.onStep(step));
      this.strip.append(c);
      this.chips.push(c); this.chipStep.push(step);
    };
    const prompt = t.steps[0]?.tokens ?? [];
    if (prompt.length === 0 && t.meta.prompt) add(t.meta.prompt, 0, 'prompt', 'prompt (token ids not recorded)');
    for (const tok of prompt) add(tok.text, 0, 'prompt', `prompt token ${tok.id} — step 0 (prefill)`);
    for (const s of t.steps) {
      const l = s.logits;
      if (!l || l.chosen === null) continue;
      add(l.chosenText ?? `#${l.chosen}`, s.index, 'gen',
        `token ${l.chosen} chosen at step ${s.index}: p = ${fmtProb(l.chosenP)}, rank ${l.chosenRank ?? '?'}`);
    }
  }

  update(t: Trace, step: number): void {
    this.chips.forEach((c, i) => c.classList.toggle('current', this.chipStep[i] === step));
    const cur = this.chips.find((c, i) => this.chipStep[i] === step && c.classList.contains('gen'));
    // Scrolling reads layout: do it after the frame is painted, not inside the step change.
    if (cur) setTimeout(() => cur.scrollIntoView({ block: 'nearest', inline: 'nearest' }), 0);
    clear(this.topk);
    const s = t.steps[step];
    const l = s?.logits;
    if (!l || l.top.length === 0) {
      this.topk.append(el('p', { class: 'muted', text: 'No logits recorded for this step.' }));
      return;
    }
    this.topk.append(el('div', { class: 'topk-head' },
      el('strong', { text: `Step ${step} — top ${l.top.length} next tokens` }),
      el('span', { class: 'entropy', text: l.entropy === null ? 'entropy not recorded (nats)' : `entropy ${fmtNats(l.entropy)}` }),
      el('span', { text: `chosen: ${tokenLabel(l.chosenText ?? '')} (p = ${fmtProb(l.chosenP)}, rank ${l.chosenRank ?? '—'})` })));
    const { shown, restCount, restP } = topShown(l);
    this.topk.append(barChart(shown.map((x) => ({
      label: `${tokenLabel(x.text)}  #${x.id}`, value: x.p, text: fmtProb(x.p), highlight: x.id === l.chosen,
      title: `token ${x.id} "${x.text}": probability ${fmtProb(x.p)}${x.logit !== null ? `, logit ${x.logit}` : ''}`,
    })), { width: Math.max(360, Math.min(640, cachedWidth(this.root, 540) - 20)), labelWidth: 150, barH: 13, cls: 'topk-chart' }));
    if (restCount > 0)
      this.topk.append(el('p', { class: 'muted', text: `${fmtInt(restCount)} more tokens of the top ${fmtInt(l.top.length)} not drawn (together p = ${fmtProb(restP)})` }));
  }
}
