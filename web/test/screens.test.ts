// The screens that are not a trace: each replaces the page's content and says which is up in
// body[data-state]; the error names the problem and offers another file; the landing page
// offers the Run panel only when the server can run a model.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { busyScreen, errorScreen, landingScreen } from '../src/page/screens';
import { installFakeDocument, type FakeElement } from './fake-dom';

describe('screens', () => {
  afterEach(() => { vi.unstubAllGlobals(); });

  it('busy and error replace the page and set its state', () => {
    const doc = installFakeDocument();
    const root = doc.createElement('div');
    const pick = vi.fn();
    busyScreen(root as unknown as HTMLElement, 'loading a.json…', pick);
    expect(doc.body.dataset.state).toBe('loading');
    expect(root.byClass('busy')[0].textContent).toBe('loading a.json…');
    errorScreen(root as unknown as HTMLElement, 'a.json: steps[3].nodes: expected an array', pick);
    expect(doc.body.dataset.state).toBe('error');
    expect(root.byClass('busy')).toEqual([]);
    expect(root.byClass('error-message')[0].textContent).toBe('a.json: steps[3].nodes: expected an array');
    const another = root.findAll((e) => e.tag === 'button' && e.textContent === 'Open another file…')[0];
    another.click();
    expect(pick).toHaveBeenCalledTimes(1);
  });

  it('the landing page: the trace list, and the Run panel only with models', () => {
    const doc = installFakeDocument();
    const root = doc.createElement('div');
    const entries = [{ name: 'a.json', size: 10 }, { name: 'b.json', size: 20 }];
    const isRunPanel = (e: FakeElement) => e.attrs.get('id') === 'run-panel';
    landingScreen(root as unknown as HTMLElement, { entries, listError: null, live: null }, () => {}, async () => {});
    expect(doc.body.dataset.state).toBe('ready');
    expect(root.byClass('trace-link').map((a) => a.textContent)).toEqual(['a.json', 'b.json']);
    expect(root.findAll(isRunPanel)).toEqual([]);
    const live = { models: [{ name: 'm.gguf', size: 1 }], busy: false, run: null, limits: { max_tokens: 64 } };
    landingScreen(root as unknown as HTMLElement, { entries: null, listError: 'api/traces: the server did not answer', live }, () => {}, async () => {});
    expect(root.findAll(isRunPanel).length).toBe(1);
    expect(root.byClass('error-box')[0].textContent).toMatch(/the server did not answer/);
  });
});
