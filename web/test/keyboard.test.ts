// The page's keys: each runs its action once and is kept from the browser; keys typed into a
// field, keys without a trace and keys the page does not use are left alone.
import { describe, expect, it, vi } from 'vitest';
import { bindKeys, keyAction, type KeyActions } from '../src/page/keyboard';

function actions() {
  const log: string[] = [];
  const a: KeyActions = {
    moveNode: (d) => log.push(`node ${d}`), stepBy: (d) => log.push(`step ${d}`), togglePlay: () => log.push('play'),
    back: () => log.push('back'), focusSearch: () => log.push('search'), fit: () => log.push('fit'), toggleView: () => log.push('view'),
  };
  return { a, log };
}

describe('keys', () => {
  it('map to the toolbar\'s actions', () => {
    const { a, log } = actions();
    for (const k of ['ArrowRight', 'ArrowLeft', 'ArrowUp', ']', 'ArrowDown', '[', ' ', 'Backspace', '/', 'f', 'p']) keyAction(k, a)!();
    expect(log).toEqual(['node 1', 'node -1', 'step 1', 'step 1', 'step -1', 'step -1', 'play', 'back', 'search', 'fit', 'view']);
    expect(keyAction('x', a)).toBeNull();
    expect(keyAction('F', a)).toBeNull();
  });

  it('are handled on the page, not in fields, and only with a trace', () => {
    const { a, log } = actions();
    let listener: ((e: Event) => void) | null = null;
    const target = { addEventListener: (type: string, f: (e: Event) => void) => { expect(type).toBe('keydown'); listener = f; } };
    let shown = true;
    bindKeys(target, () => shown, a);
    const press = (key: string, tagName = 'BODY') => {
      const e = { key, target: { tagName }, preventDefault: vi.fn() };
      listener!(e as unknown as Event);
      return e.preventDefault.mock.calls.length > 0;
    };
    expect(press('ArrowUp')).toBe(true);
    expect(press('q')).toBe(false);                 // not ours: the browser keeps it
    for (const tag of ['INPUT', 'SELECT', 'TEXTAREA']) expect(press('ArrowUp', tag)).toBe(false);
    shown = false;
    expect(press('ArrowUp')).toBe(false);
    expect(log).toEqual(['step 1']);
  });
});
