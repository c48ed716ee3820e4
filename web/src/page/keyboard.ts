// The page's keys (the toolbar lists them): ←/→ node, ↑/↓ or [ ] step, space play, Backspace
// back, / search, f fit, p operators ↔ pipeline. Keys typed into a field stay in the field.
export interface KeyActions {
  moveNode(delta: number): void;
  stepBy(delta: number): void;
  togglePlay(): void;
  back(): void;
  focusSearch(): void;
  fit(): void;
  toggleView(): void;
}

// Text fields type; the step slider (an input) and the selects move themselves.
const FIELDS = new Set(['INPUT', 'SELECT', 'TEXTAREA']);

// What a key does, or null: the key is left to the browser.
export function keyAction(key: string, a: KeyActions): (() => void) | null {
  switch (key) {
    case 'ArrowRight': return () => a.moveNode(1);
    case 'ArrowLeft': return () => a.moveNode(-1);
    case 'ArrowUp': case ']': return () => a.stepBy(1);
    case 'ArrowDown': case '[': return () => a.stepBy(-1);
    case ' ': return () => a.togglePlay();
    case 'Backspace': return () => a.back();
    case '/': return () => a.focusSearch();
    case 'f': return () => a.fit();
    case 'p': return () => a.toggleView();
    default: return null;
  }
}

// `active`: whether the keys apply now (a trace is shown).
export function bindKeys(target: Pick<EventTarget, 'addEventListener'>, active: () => boolean, a: KeyActions): void {
  target.addEventListener('keydown', (ev) => {
    const e = ev as KeyboardEvent;
    if (!active()) return;
    if (FIELDS.has((e.target as HTMLElement).tagName)) return;
    const run = keyAction(e.key, a);
    if (!run) return;
    run();
    e.preventDefault();
  });
}
