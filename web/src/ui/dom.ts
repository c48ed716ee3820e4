// Tiny DOM helpers: build elements without a framework.
type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | number | boolean | undefined> = {},
                                                          ...children: Child[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') e.className = String(v);
    else if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

export function clear(e: Element): void {
  while (e.firstChild) e.removeChild(e.firstChild);
}

// A two-column table of label → value rows.
export function kvTable(rows: [string, string | Node][], cls = 'kv'): HTMLTableElement {
  const t = el('table', { class: cls });
  for (const [k, v] of rows) t.append(el('tr', {}, el('th', { text: k }), el('td', {}, v)));
  return t;
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return el('section', { class: 'panel-section' }, el('h3', { text: title }), ...children);
}
