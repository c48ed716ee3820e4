// Just enough of the DOM for the page's small modules (el(), clear(), listeners, dataset,
// classList): vitest runs in node, and the real page is covered by the e2e suite.
import { vi } from 'vitest';

export class FakeElement {
  className = ''; files: File[] | null = null; clicks = 0;
  attrs = new Map<string, string>();
  children: FakeElement[] = [];
  dataset: Record<string, string | undefined> = {};
  listeners = new Map<string, ((e: unknown) => void)[]>();
  private text = '';
  private classes = new Set<string>();
  classList = {
    add: (c: string) => this.classes.add(c), remove: (c: string) => this.classes.delete(c),
    contains: (c: string) => this.classes.has(c) || this.className.split(' ').includes(c),
    toggle: (c: string, on?: boolean) => { (on ?? !this.classes.has(c)) ? this.classes.add(c) : this.classes.delete(c); },
  };
  constructor(readonly tag: string) {}
  get textContent(): string { return this.text + this.children.map((c) => c.textContent).join(''); }
  set textContent(t: string) { this.text = t; this.children = []; }
  get firstChild(): FakeElement | null { return this.children[0] ?? null; }
  removeChild(c: FakeElement) { this.children = this.children.filter((x) => x !== c); }
  setAttribute(k: string, v: string) { this.attrs.set(k, v); }
  append(...cs: (FakeElement | string)[]) {
    for (const c of cs) {
      if (typeof c === 'string') { const t = new FakeElement('#text'); t.text = c; this.children.push(t); } else this.children.push(c);
    }
  }
  addEventListener(type: string, f: (e: unknown) => void) { this.listeners.set(type, [...(this.listeners.get(type) ?? []), f]); }
  fire(type: string, e: unknown = {}) { for (const f of this.listeners.get(type) ?? []) f(e); }
  click() { this.clicks++; this.fire('click'); }
  // Every element below this one (depth first) that matches `test`.
  findAll(test: (e: FakeElement) => boolean): FakeElement[] {
    return this.children.flatMap((c) => [...(test(c) ? [c] : []), ...c.findAll(test)]);
  }
  byClass(c: string): FakeElement[] { return this.findAll((e) => e.className.split(' ').includes(c)); }
}

export type FakeDocument = FakeElement & { body: FakeElement; createElement(tag: string): FakeElement };

// Installs a fake `document` for the test (undo with vi.unstubAllGlobals()).
export function installFakeDocument(): FakeDocument {
  const doc = new FakeElement('#document') as FakeDocument;
  doc.body = new FakeElement('body');
  doc.createElement = (tag: string) => new FakeElement(tag);
  vi.stubGlobal('document', doc);
  return doc;
}
