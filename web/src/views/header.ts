// The page header: the trace(s) shown and one line of run metadata, with units. The line is
// clipped to the window; hovering shows all of it (with the prompt), clicking expands it.
import type { Trace } from '../model/types';
import { el } from '../ui/dom';
import { fmtNum } from '../ui/format';

// qwen3's attention is n_head × head_dim wide, which may differ from n_embd: say so when it does.
function attentionWidth(hp: Record<string, number>): string {
  const w = hp.n_head * hp.head_dim;
  return hp.n_head && hp.head_dim && w !== hp.n_embd ? `, attention ${hp.n_head} × ${hp.head_dim} = ${w} wide` : '';
}

export function header(a: Trace | null, b: Trace | null, openFile: () => void): HTMLElement {
  const open = el('button', { class: 'open-file', text: 'Open file…', title: 'open a local .json / .json.gz trace (or drop one on the page)' });
  open.addEventListener('click', openFile);
  const h = el('header', { class: 'app-header' }, el('a', { href: './', class: 'brand', text: 'minfer viz' }));
  if (a) {
    const m = a.meta, hp = m.hparams as Record<string, number>;
    const tm = a.timings as Record<string, number> | null;
    const parts = [
        m.modelFile || m.modelName, m.architecture && hp.n_layer ? `${m.architecture}, ${hp.n_layer} layers × ${hp.n_embd} wide${attentionWidth(hp)}` : '',
        m.backend && `${m.backend}${m.device ? ` (${m.device})` : ''}`, m.matmulPath && `matmul path ${m.matmulPath}${b ? ` vs ${b.meta.matmulPath}` : ''}`,
        a.steps.length ? `${a.steps.length} steps` : '', `v${a.version}`,
        tm?.prefill_tok_s ? `prefill ${fmtNum(tm.prefill_tok_s, 3)} tokens/s` : '', tm?.decode_tok_s ? `decode ${fmtNum(tm.decode_tok_s, 3)} tokens/s` : '',
      ].filter(Boolean);
    const full = [...parts, m.prompt && `prompt: ${JSON.stringify(m.prompt)}`, b ? `B: ${b.meta.modelFile || b.meta.modelName} · ${b.meta.backend} · ${b.meta.matmulPath}` : ''].filter(Boolean);
    const meta = el('span', { class: 'meta', text: parts.join(' · '), title: `${full.join('\n')}\n(click to expand or fold)`, role: 'button', tabindex: 0 });
    const toggle = () => {
      const open = h.classList.toggle('expanded');
      meta.textContent = open ? full.join(' · ') : parts.join(' · ');
    };
    meta.addEventListener('click', toggle);
    meta.addEventListener('keydown', (e) => { if (e.key === 'Enter') toggle(); });
    h.append(el('span', { class: 'trace-name', text: b ? `A: ${a.name}  ↔  B: ${b.name}` : a.name, title: b ? `A: ${a.name}\nB: ${b.name}` : a.name }), meta);
  }
  h.append(el('span', { class: 'spacer' }), el('a', { href: './', class: 'nav', text: 'all traces' }), open);
  return h;
}
