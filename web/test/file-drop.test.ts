// Local files: the picker and drag and drop both hand the file over; the drop overlay shows
// while a file is dragged over the page (however many children the drag crosses).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { localFiles } from '../src/page/file-drop';
import { installFakeDocument } from './fake-dom';

describe('local files', () => {
  afterEach(() => { vi.unstubAllGlobals(); });

  it('the picker and a drop both open the file; the overlay follows the drag', () => {
    const doc = installFakeDocument();
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
