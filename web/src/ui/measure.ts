// Element widths read once and cached until the window resizes: reading layout in the middle
// of a step change would force a synchronous reflow of the whole page (graph SVG included).
const cache = new WeakMap<Element, number>();
let generation = 0;
const seen = new WeakMap<Element, number>();
window.addEventListener('resize', () => { generation++; });

export function cachedWidth(e: Element, fallback: number): number {
  if (seen.get(e) === generation && cache.has(e)) return cache.get(e)!;
  const w = (e as HTMLElement).clientWidth || 0;
  if (w > 0) { cache.set(e, w); seen.set(e, generation); }
  return w || fallback;
}
