// The banner above the graph during a live run: progress, Cancel, and when the run is done the
// saved trace (open it, or compare it with another trace of the list).
import type { TraceEntry } from '../io/api';
import { el } from '../ui/dom';

export class LiveBanner {
  readonly root = el('div', { class: 'live-banner', id: 'live-banner' });
  private text = el('span', { class: 'live-text', text: 'starting…' });
  private cancel = el('button', { class: 'live-cancel', text: '■ Cancel', title: 'stop the run at the next step (its trace is kept)' });
  private extra = el('span', { class: 'live-extra' });

  constructor(onCancel: () => void) {
    this.cancel.addEventListener('click', () => { this.cancel.disabled = true; onCancel(); });
    this.root.append(el('span', { class: 'live-dot' }), this.text, this.cancel, this.extra);
  }

  progress(text: string): void {
    this.text.textContent = text;
  }

  done(text: string, trace: string, others: TraceEntry[]): void {
    this.root.classList.add('finished');
    this.text.textContent = text;
    this.cancel.remove();
    if (!trace) return;  // nothing saved
    const open = el('a', { href: `?trace=${encodeURIComponent(trace)}`, class: 'live-open', text: 'open the saved trace' });
    this.extra.append(' · ', open);
    if (others.length) {
      const sel = el('select', { class: 'live-compare-with' }, ...others.map((o) => el('option', { value: o.name, text: o.name })));
      const go = el('button', { class: 'live-compare', text: 'Compare' });
      go.addEventListener('click', () => { location.search = `?a=${encodeURIComponent(trace)}&b=${encodeURIComponent(sel.value)}`; });
      this.extra.append(' · compare with ', sel, ' ', go);
    }
  }

  failed(message: string): void {
    this.root.classList.add('failed');
    this.text.textContent = `Run failed: ${message}`;
    this.cancel.remove();
  }
}
