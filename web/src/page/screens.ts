// The screens that are not a trace: waiting, an error, the landing page (the server's traces,
// the Run panel). Each replaces the page's content; body[data-state] says which is up (the e2e
// tests and the page-speed benchmark wait on it).
import type { RunRequest } from '../io/live';
import type { Landing } from '../io/trace-loader';
import { clear, el } from '../ui/dom';
import { header } from '../views/header';
import { runPanel } from '../views/run-panel';
import { traceListView } from '../views/trace-list';

export function markReady(): void {
  document.body.dataset.state = 'ready';
}

export function busyScreen(root: HTMLElement, text: string, pickFile: () => void): void {
  document.body.dataset.state = 'loading';
  clear(root);
  root.append(header(null, null, pickFile), el('div', { class: 'busy', text }));
}

export function errorScreen(root: HTMLElement, message: string, pickFile: () => void): void {
  document.body.dataset.state = 'error';
  clear(root);
  const box = el('div', { class: 'error-box', role: 'alert' }, el('strong', { text: 'Cannot show this trace. ' }), el('span', { class: 'error-message', text: message }));
  const open = el('button', { text: 'Open another file…' });
  open.addEventListener('click', pickFile);
  root.append(header(null, null, pickFile), el('main', { class: 'landing' }, box, el('p', {}, el('a', { href: './', text: '← back to the trace list' }), ' ', open)));
}

// The Run panel shows only when the server can run a model (minfer-viz --model).
export function landingScreen(root: HTMLElement, l: Landing, pickFile: () => void, onRun: (r: RunRequest) => Promise<void>): void {
  clear(root);
  root.append(header(null, null, pickFile), el('main', { class: 'landing' },
    l.live && l.live.models.length ? runPanel(l.live, onRun) : null,
    traceListView(l.entries, l.listError, pickFile)));
  markReady();
}
