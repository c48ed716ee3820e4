// The bottom panel: its tabs (Comparison, Tokens & top-k, Timings, Timeline, Roofline) and the
// chosen tab's panel for the selected step. In a comparison the tokens, timings and timeline
// tabs show A above B.
import { traceHasKernels } from '../model/gpu-time';
import type { Trace } from '../model/types';
import { setStep } from '../state/navigation';
import type { Loaded, SelectionStore, Tab } from '../state/selection';
import { clear, el } from '../ui/dom';
import { ComparePanel } from '../views/compare-panel';
import { RooflinePanel } from '../views/roofline-panel';
import { TimingsPanel } from '../views/timings-panel';
import { TokensPanel } from '../views/tokens-panel';

export class BottomTabs {
  readonly compare: ComparePanel;
  private tokens: TokensPanel;
  private tokensB: TokensPanel;
  private timings: TimingsPanel;
  private timingsB: TimingsPanel;
  private roofline: RooflinePanel;
  private bar: HTMLElement | null = null;
  private body: HTMLElement | null = null;

  // `goToNode`: select and centre a node; `setReference`: measure the comparison against A or B.
  constructor(private store: SelectionStore, goToNode: (id: number) => void, setReference: (ref: 'a' | 'b') => void) {
    const toStep = (i: number) => setStep(store, i);
    this.tokens = new TokensPanel(toStep);
    this.tokensB = new TokensPanel(toStep);
    this.timings = new TimingsPanel(goToNode, toStep);
    this.timingsB = new TimingsPanel(goToNode, toStep);
    this.roofline = new RooflinePanel(goToNode);
    this.compare = new ComparePanel((s, n) => { toStep(s); if (n >= 0) goToNode(n); }, setReference);
  }

  // A newly shown trace, once the page is laid out for it.
  setTraces(l: Loaded): void {
    this.tokens.setTrace(l.trace);
    if (l.traceB) this.tokensB.setTrace(l.traceB);
    if (l.cmp && l.traceB) this.compare.setComparison(l.trace, l.traceB, l.cmp);
  }

  // The tab bar and an empty body; refresh() fills it.
  element(): HTMLElement {
    const s = this.store.get();
    const tabs: [Tab, string][] = [['tokens', 'Tokens & top-k'], ['timings', 'Timings'], ['kernels', 'Timeline']];
    if (traceHasKernels(s.trace!)) tabs.push(['roofline', 'Roofline']);
    if (s.cmp) tabs.unshift(['compare', 'Comparison']);
    const bar = this.bar = el('div', { class: 'tabs' });
    this.body = el('div', { class: 'tab-body', id: 'tab-body' });
    for (const [id, label] of tabs) {
      const b = el('button', { class: `tab${id === s.tab ? ' on' : ''}`, 'data-tab': id, text: label });
      b.addEventListener('click', () => this.store.set({ tab: id }, { force: true }));
      bar.append(b);
    }
    return el('section', { class: 'bottom' }, bar, this.body);
  }

  selectNode(id: number | null): void {
    this.timings.selectNode(id);
    this.timingsB.selectNode(id);
    this.roofline.select(id);
  }

  tabChanged(): void {
    const tab = this.store.get().tab;
    this.bar?.querySelectorAll('.tab').forEach((x) => x.classList.toggle('on', (x as HTMLElement).dataset.tab === tab));
    this.refresh();
  }

  // Another reference: the comparison's numbers change.
  comparisonChanged(): void {
    const s = this.store.get();
    this.compare.setComparison(s.trace!, s.traceB!, s.cmp!);
  }

  // New token data (a live run, a vocabulary): the Tokens tab's list of steps.
  tokensChanged(trace: Trace): void {
    this.tokens.setTrace(trace);
  }

  refresh(): void {
    const body = this.body;
    const { trace: t, traceB: b, tab, step: i, cmp } = this.store.get();
    if (!body || !body.isConnected || !t) return;
    const pick = (which: 'A' | 'B'): HTMLElement => {
      const tok = which === 'A' ? this.tokens : this.tokensB, tim = which === 'A' ? this.timings : this.timingsB;
      return tab === 'tokens' ? tok.root : tab === 'timings' ? tim.root : tim.kernelsRoot;
    };
    const want: HTMLElement[] = tab === 'compare' ? [this.compare.root] : tab === 'roofline' ? [this.roofline.root]
      : b ? [pick('A'), pick('B')] : [pick('A')];
    const key = `${tab}|${b ? 2 : 1}`;
    if (body.dataset.key !== key) {
      clear(body);
      body.dataset.key = key;
      if (want.length === 1) body.append(want[0]);
      else body.append(...want.map((w, k) => el('div', { class: 'ab-block', 'data-run': k ? 'B' : 'A' },
        el('div', { class: 'ab-label', text: k ? `B: ${b!.name} (${b!.meta.matmulPath || b!.meta.backend})` : `A: ${t.name} (${t.meta.matmulPath || t.meta.backend})` }), w)));
    }
    const step = t.steps[i];
    if (!step) return;
    const stepB = b?.steps[i];
    if (tab === 'timings' || tab === 'kernels') {
      this.timings.update(t, step);
      if (b && stepB) this.timingsB.update(b, stepB);
    }
    if (tab === 'compare' && cmp && b) this.compare.update(t, b, cmp, i);
    if (tab === 'roofline') this.roofline.update(t, step);
    if (tab === 'tokens') {
      this.tokens.update(t, i);
      if (b) this.tokensB.update(b, i);
    }
  }
}
