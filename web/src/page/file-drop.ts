// Local files: the hidden file input behind every "Open file…" button, and a trace dropped
// anywhere on the page (an overlay shows while one is dragged over it).
import { el } from '../ui/dom';

// Returns what the "Open file…" buttons call: the browser's file picker.
export function localFiles(onFile: (f: File) => void): () => void {
  const input = el('input', { type: 'file', accept: '.json,.gz,application/json,application/gzip', style: 'display:none' });
  input.addEventListener('change', () => { const f = input.files?.[0]; if (f) onFile(f); });
  document.body.append(input);
  const overlay = el('div', { class: 'drop-overlay', text: 'Drop a minfer trace (.json or .json.gz) to open it' });
  document.body.append(overlay);
  // dragenter/dragleave fire for every child crossed: count them, hide at zero.
  let depth = 0;
  document.addEventListener('dragenter', (e) => { e.preventDefault(); depth++; overlay.classList.add('on'); });
  document.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; overlay.classList.remove('on'); } });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault(); depth = 0; overlay.classList.remove('on');
    const f = e.dataTransfer?.files?.[0];
    if (f) onFile(f);
  });
  return () => input.click();
}
