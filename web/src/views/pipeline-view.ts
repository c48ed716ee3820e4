// The pipeline view: the same graph as semantic stages — Input → Embedding → [Layer × N:
// RMSNorm → Attention → +Residual → RMSNorm → FFN → +Residual] → Final norm → LM head →
// Sampler. One box per stage with its output shape, weight types, the colour metric of its
// output (same colours and legend as the operator graph) and its time; click a stage for its
// details and operators (drill-down). Plain HTML boxes: a step change rewrites ~6 × N texts.
import { LAYER_STAGES, STAGE_HELP, STAGE_LABEL, buildPipeline, summarizeStage, type Pipeline, type Stage } from '../model/pipeline';
import type { Step, TraceGraph } from '../model/types';
import { clear, el } from '../ui/dom';
import { fmtNum, fmtProb, fmtUs, tokenLabel } from '../ui/format';
import { MISSING_FILL, textColor } from './node-colors';
import type { NodeStyle } from './graph-view';

interface Box { stage: Stage; root: HTMLElement; sub: HTMLElement; val: HTMLElement; applied: string }

export class PipelineView {
  readonly root = el('div', { class: 'pipeline-view', id: 'pipeline-view' });
  private graph: TraceGraph | null = null;
  private pipeline: Pipeline | null = null;
  private boxes: Box[] = [];
  private selected: string | null = null;
  private step: Step | undefined;

  constructor(private onStage: (s: Stage, g: TraceGraph) => void) {}

  get stages(): Pipeline | null { return this.pipeline; }

  setGraph(g: TraceGraph): void {
    if (this.graph === g) return;
    const sameShape = this.graph && this.graph.nodes.length === g.nodes.length && this.graph.nodes.every((n, i) => n.name === g.nodes[i].name);
    this.graph = g;
    this.pipeline = buildPipeline(g);
    if (sameShape && this.boxes.length) {     // prefill ↔ decode: same stages, other shapes
      const byKey = new Map([...this.pipeline.byNode.values(), ...this.pipeline.tail].map((s) => [s.key, s]));
      for (const b of this.boxes) b.stage = byKey.get(b.stage.key) ?? b.stage;
      return;
    }
    this.render();
  }

  private render(): void {
    const p = this.pipeline!, g = this.graph!;
    clear(this.root);
    this.boxes = [];
    const arrow = () => el('span', { class: 'pl-arrow', text: '→' });
    const head = el('div', { class: 'pl-row' });
    p.head.forEach((s) => head.append(this.box(s), arrow()));
    const n = p.layers.length;
    const grid = el('div', { class: 'pl-layers', style: `grid-template-columns: 74px repeat(${LAYER_STAGES.length}, minmax(96px, 1fr))` });
    grid.append(el('div', { class: 'pl-layers-title', text: `Layer × ${n}` }));
    // Column heads: what every layer's stage is, with the shapes and weight types of layer 0.
    for (const kind of LAYER_STAGES) {
      const s0 = p.layers[0]?.stages.find((s) => s.kind === kind);
      const sum = s0 ? summarizeStage(g, s0, undefined) : null;
      grid.append(el('div', { class: 'pl-col-head', title: `${STAGE_LABEL[kind]} — the same stage in every layer` },
        el('strong', { text: STAGE_LABEL[kind] }),
        el('div', { class: 'pl-sub', text: sum ? [shape(sum.shape), sum.weightTypes.join('/')].filter(Boolean).join(' · ') : '' })));
    }
    for (const l of p.layers) {
      grid.append(el('div', { class: 'pl-layer-label', text: `layer ${l.layer}` }));
      for (const kind of LAYER_STAGES) {
        const s = l.stages.find((x) => x.kind === kind);
        grid.append(s ? this.box(s, true) : el('div', { class: 'pl-empty', text: '—' }));
      }
    }
    const tail = el('div', { class: 'pl-row' });
    p.tail.forEach((s, i) => { if (i) tail.append(arrow()); tail.append(this.box(s)); });
    this.root.append(
      el('div', { class: 'pl-note', text: 'Pipeline: one box per stage, derived from the graph. Colour = the stage output\'s value of the colour metric (legend above); click a stage for its details and operators.' }),
      head, el('div', { class: 'pl-down', text: '↓' }), grid, el('div', { class: 'pl-down', text: '↓' }), tail);
    this.applySelection();
  }

  private box(s: Stage, compact = false): HTMLElement {
    const sub = el('div', { class: 'pl-sub' }), val = el('div', { class: 'pl-val' });
    const root = el('div', { class: `pl-box${compact ? ' compact' : ''}`, 'data-stage': s.key, 'data-kind': s.kind, role: 'button', tabindex: 0 },
      compact ? null : el('div', { class: 'pl-name', text: STAGE_LABEL[s.kind] }), sub, val);
    if (compact) sub.classList.add('pl-compact-sub');
    const open = () => { this.selected = s.key; this.applySelection(); this.onStage(this.boxes.find((b) => b.root === root)!.stage, this.graph!); };
    root.addEventListener('click', open);
    // The tooltip is built on hover, not on every step change.
    root.addEventListener('mouseenter', () => { root.title = this.tooltip(this.boxes.find((b) => b.root === root)!.stage); });
    root.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(); });
    this.boxes.push({ stage: s, root, sub, val, applied: '' });
    return root;
  }

  private tooltip(s: Stage): string {
    if (!this.graph || s.kind === 'sampler') return STAGE_LABEL[s.kind];
    const sum = summarizeStage(this.graph, s, this.step);
    return `${STAGE_LABEL[s.kind]}${s.layer >= 0 ? `, layer ${s.layer}` : ''}: ${s.nodes.length} operator(s) (${sum.ops.join(', ')})\n` +
      `output ${shape(sum.shape) || '—'}${sum.weightTypes.length ? `, weights ${sum.weightTypes.join(', ')}` : ''}\n` +
      `max|x| ${fmtNum(sum.absmax, 4)}, mean|x| ${fmtNum(sum.absmean, 4)}, time ${fmtUs(sum.timeUs)}\nclick for its details and operators`;
  }

  select(key: string | null): void {
    this.selected = key;
    this.applySelection();
  }

  private applySelection(): void {
    for (const b of this.boxes) b.root.classList.toggle('selected', b.stage.key === this.selected);
  }

  // Per step: texts and fills. `styles` are the operator graph's node styles (colour metric).
  update(step: Step | undefined, styles: Map<number, NodeStyle>): void {
    const g = this.graph;
    if (!g) return;
    this.step = step;
    for (const b of this.boxes) {
      const s = b.stage;
      let fill = MISSING_FILL, sub = '', val = '';
      if (s.kind === 'sampler') {
        const l = step?.logits;
        sub = l ? `top ${l.top.length}${l.entropy !== null ? ` · entropy ${fmtNum(l.entropy, 3)} nats` : ''}` : 'no logits';
        val = l && l.chosen !== null ? `→ ${tokenLabel(l.chosenText ?? `#${l.chosen}`)} (p ${fmtProb(l.chosenP)})` : '';
      } else {
        const sum = summarizeStage(g, s, step);
        const st = s.output >= 0 ? styles.get(s.output) : undefined;
        if (st?.fill) fill = st.fill;
        const compactSub = b.root.classList.contains('compact');
        sub = compactSub ? '' : [shape(sum.shape), sum.weightTypes.join('/')].filter(Boolean).join(' · ');
        val = [st?.text ?? '', sum.timeUs !== null ? fmtUs(sum.timeUs) : '', sum.nonfinite ? `${sum.nonfinite} NaN/Inf` : ''].filter(Boolean).join(' · ');

      }
      const key = `${fill}|${sub}|${val}`;
      if (key === b.applied) continue;
      b.applied = key;
      b.root.style.background = fill;
      b.root.style.color = fill === MISSING_FILL ? '' : textColor(fill);
      if (b.sub.textContent !== sub && sub) b.sub.textContent = sub;
      b.val.textContent = val;
    }
  }
}

function shape(s: number[] | null): string {
  return s ? `${s.join(' × ')}` : '';
}

// The inspector's content for a stage: what it is, its aggregate numbers at this step, and its
// operators (click one to drill down into the operator graph).
export function stageDetails(g: TraceGraph, s: Stage, step: Step | undefined, onOp: (id: number) => void): HTMLElement {
  const sum = summarizeStage(g, s, step);
  const ops = el('div', { class: 'links pl-ops' });
  for (const id of s.nodes) {
    const n = g.nodes[id];
    const a = el('a', { href: '#', class: 'node-link', 'data-id': id, text: n.name, title: `${n.op} [${n.shape.join(' × ')}]${n.fusedInto >= 0 ? ' (fused)' : ''}` });
    a.addEventListener('click', (e) => { e.preventDefault(); onOp(id); });
    ops.append(a);
  }
  const rows: [string, string][] = [
    ['stage', `${STAGE_LABEL[s.kind]}${s.layer >= 0 ? ` (layer ${s.layer})` : ''}`],
    ['what it does', STAGE_HELP[s.kind]],
    ['output shape', sum.shape ? `[${sum.shape.join(' × ')}] (token rows × features)` : '—'],
    ['weight types', sum.weightTypes.join(', ') || '—'],
    ['ops', sum.ops.join(', ') || '—'],
    ['max |x| of output', fmtNum(sum.absmax, 4)],
    ['mean |x| of output', fmtNum(sum.absmean, 4)],
    ['NaN/Inf values', String(sum.nonfinite)],
    ['time (sum of its operators)', fmtUs(sum.timeUs)],
  ];
  if (s.kind === 'sampler' && step?.logits) {
    const l = step.logits;
    rows.push(['chosen token', l.chosen === null ? '— (not in the trace)' : `${tokenLabel(l.chosenText ?? '')} #${l.chosen} (p ${fmtProb(l.chosenP)}, rank ${l.chosenRank ?? '—'})`]);
    rows.push(['entropy', l.entropy === null ? '—' : `${fmtNum(l.entropy, 4)} nats`]);
  }
  const t = el('table', { class: 'kv' });
  for (const [k, v] of rows) t.append(el('tr', {}, el('th', { text: k }), el('td', { text: v })));
  return el('div', { class: 'stage-details' },
    el('div', { class: 'inspector-head' }, el('h2', { class: 'stage-title', text: `${STAGE_LABEL[s.kind]}${s.layer >= 0 ? ` · layer ${s.layer}` : ''}` }),
      el('span', { class: 'badge', text: 'stage' }), el('span', { class: 'step-badge', text: step ? `step ${step.index} (${step.phase})` : '' })),
    t, el('section', { class: 'panel-section' }, el('h3', { text: `Operators (${s.nodes.length}) — click to inspect` }), ops));
}
