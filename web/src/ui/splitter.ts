// A horizontal drag handle that resizes the panel below it (height in px, remembered in
// localStorage). Keyboard: ↑/↓ move it by 24 px when focused.
import { el } from './dom';

const KEY = 'minfer.bottomPanelPx';

export function bottomSplitter(panel: HTMLElement, onResize: () => void): HTMLElement {
  const handle = el('div', { class: 'splitter', role: 'separator', 'aria-orientation': 'horizontal', tabindex: 0,
                              title: 'drag to resize the bottom panel (↑/↓ when focused)' });
  const clamp = (px: number) => Math.round(Math.max(90, Math.min(window.innerHeight - 220, px)));
  const set = (px: number) => {
    panel.style.height = `${clamp(px)}px`;
    try { localStorage.setItem(KEY, String(clamp(px))); } catch { /* private mode */ }
    onResize();
  };
  const saved = Number((() => { try { return localStorage.getItem(KEY); } catch { return null; } })());
  if (saved > 0) panel.style.height = `${clamp(saved)}px`;
  let startY = 0, startH = 0;
  const move = (e: PointerEvent) => set(startH - (e.clientY - startY));
  handle.addEventListener('pointerdown', (e) => {
    startY = e.clientY; startH = panel.getBoundingClientRect().height;
    handle.setPointerCapture(e.pointerId);
    handle.addEventListener('pointermove', move);
    handle.classList.add('dragging');
  });
  handle.addEventListener('pointerup', () => { handle.removeEventListener('pointermove', move); handle.classList.remove('dragging'); });
  handle.addEventListener('keydown', (e) => {
    const h = panel.getBoundingClientRect().height;
    if (e.key === 'ArrowUp') { set(h + 24); e.preventDefault(); e.stopPropagation(); }
    if (e.key === 'ArrowDown') { set(h - 24); e.preventDefault(); e.stopPropagation(); }
  });
  return handle;
}
