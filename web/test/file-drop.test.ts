// Local files: the picker and drag and drop both hand the file over; the drop overlay shows
// while a file is dragged over the page (however many children the drag crosses).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { localFiles } from '../src/page/file-drop';

// Just enough DOM for el() and the listeners.
class FakeElement {
  className = ''; textContent = ''; files: File[] | null = null; clicks = 0;
  attrs = new Map<string, string>();
  children: FakeElement[] = [];
  listeners = new Map<string, ((e: unknown) => void)[]>();
  private classes = new Set<string>();
  classList = { add: (c: string) => this.classes.add(c), remove: (c: string) => this.classes.delete(c), contains: (c: string) => this.classes.has(c) };
  constructor(readonly tag: string) {}
  setAttribute(k: string, v: string) { this.attrs.set(k, v); }
  append(...c: FakeElement[]) { this.children.push(...c); }
  addEventListener(type: string, f: (e: unknown) => void) { this.listeners.set(type, [...(this.listeners.get(type) ?? []), f]); }
  fire(type: string, e: unknown = {}) { for (const f of this.listeners.get(type) ?? []) f(e); }
  click() { this.clicks++; }
}

function fakeDocument() {
  const doc = new FakeElement('#document') as FakeElement & { body: FakeElement; createElement: (t: string) => FakeElement };
  doc.body = new FakeElement('body');
  doc.createElement = (t: string) => new FakeElement(t);
  return doc;
}

describe('local files', () => {
  afterEach(() => { vi.unstubAllGlobals(); });

  it('the picker and a drop both open the file; the overlay follows the drag', () => {
    const doc = fakeDocument();
    vi.stubGlobal('document', doc);
    const opened: string[] = [];
    const pick = localFiles((f) => opened.push(f.name));
    const [input, overlay] = doc.body.children;
    expect(input.attrs.get('type')).toBe('file');
    pick();
    expect(input.clicks).toBe(1);
    input.files = [new File(['{}'], 'picked.json')];
    input.fire('change');
    const drag = { preventDefault: vi.fn() };
    doc.fire('dragenter', drag);
    doc.fire('dragenter', drag);            // into a child
    doc.fire('dragleave');                  // out of the child: still over the page
    expect(overlay.classList.contains('on')).toBe(true);
    doc.fire('dragleave');
    expect(overlay.classList.contains('on')).toBe(false);
    doc.fire('dragenter', drag);
    doc.fire('drop', { preventDefault: vi.fn(), dataTransfer: { files: [new File(['{}'], 'dropped.json.gz')] } });
    expect(overlay.classList.contains('on')).toBe(false);
    doc.fire('drop', { preventDefault: vi.fn(), dataTransfer: { files: [] } });   // a drop without a file: nothing
    expect(opened).toEqual(['picked.json', 'dropped.json.gz']);
    expect(drag.preventDefault).toHaveBeenCalledTimes(3);
  });
});
