// The Run panel of the landing page (only when minfer-viz has --model): prompt, max tokens,
// sampling (temperature, top-k, seed), backend and matmul path; Run starts a live run.
import type { LiveModels, RunRequest } from '../io/live';
import { el } from '../ui/dom';
import { fmtBytes } from '../ui/format';

export function runPanel(m: LiveModels, onRun: (r: RunRequest) => Promise<void>): HTMLElement {
  const model = el('select', { id: 'run-model' }, ...m.models.map((x) => el('option', { value: x.name, text: `${x.name} (${fmtBytes(x.size)})` })));
  const prompt = el('textarea', { id: 'run-prompt', rows: 3, placeholder: 'prompt (sent as is: add a chat template yourself if the model needs one)' });
  prompt.value = '<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n';
  const num = (id: string, value: number, min: number, max: number, step: number, title: string) =>
    el('input', { id, type: 'number', value, min, max, step, title, class: 'num' });
  const maxTok = num('run-max-tokens', 32, 1, m.limits.max_tokens, 1, `tokens to generate (1 to ${m.limits.max_tokens})`);
  const temp = num('run-temperature', 0.7, 0, 10, 0.05, 'sampling temperature (0 = greedy)');
  const topk = num('run-top-k', 40, 0, 100000, 1, 'top-k (0 = off)');
  const seed = num('run-seed', 1, 0, 2 ** 31, 1, 'sampler seed');
  const rep = num('run-repeat-penalty', 1.1, 0.5, 5, 0.05, 'repeat penalty (1 = off)');
  // auto first: the server's engine takes the GPU where one is usable, the CPU otherwise; the
  // page's header then names the backend it picked.
  const backend = el('select', { id: 'run-backend', title: 'where the engine runs: auto = cuda where a usable GPU exists, else cpu' },
    el('option', { value: 'auto', text: 'auto (cuda if a GPU, else cpu)' }), el('option', { value: 'cuda', text: 'cuda' }), el('option', { value: 'cpu', text: 'cpu' }));
  const path = el('select', { id: 'run-path', title: 'prefill matmul path' },
    el('option', { value: 'mmq', text: 'int8 MMQ prefill' }), el('option', { value: 'f16', text: 'float prefill' }));
  const go = el('button', { id: 'run-go', class: 'primary', text: '▶ Run' });
  const status = el('div', { class: 'run-status', role: 'status' });
  if (m.busy) status.textContent = `A run (${m.run}) is in progress on the server.`;
  go.addEventListener('click', async () => {
    go.disabled = true;
    status.textContent = 'starting…';
    status.classList.remove('error');
    try {
      await onRun({ model: model.value, prompt: prompt.value, max_tokens: Number(maxTok.value), temperature: Number(temp.value),
                    top_k: Number(topk.value), top_p: 0.95, seed: Number(seed.value), repeat_penalty: Number(rep.value), backend: backend.value, matmul_path: path.value });
    } catch (e) {
      status.textContent = (e as Error).message;
      status.classList.add('error');
      go.disabled = false;
    }
  });
  const field = (label: string, w: HTMLElement) => el('label', { class: 'run-field' }, el('span', { text: label }), w);
  return el('section', { class: 'run-panel', id: 'run-panel' },
    el('h2', { text: 'Run a prompt' }),
    el('p', { class: 'muted', text: 'The server runs the engine (one run at a time), the graph lights up step by step as the engine reports its nodes, tokens arrive as they are sampled, and the run is saved as a trace here.' }),
    el('div', { class: 'run-row' }, field('model', model), field('max tokens', maxTok), field('temperature', temp), field('top-k', topk),
      field('seed', seed), field('repeat penalty', rep), field('backend', backend), field('matmul path', path)),
    prompt, el('div', { class: 'run-row' }, go, status));
}
