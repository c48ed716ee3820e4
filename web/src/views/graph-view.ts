// The graph view: an SVG drawn once per graph structure (rows = layers, collapsible), then
// restyled in place when the step, metric, filters or selection change — no re-layout.
// Two layers: a canvas under the SVG paints what changes per step (node fills, names, values;
// row backgrounds) for the rows in view only; the SVG above holds the structure (edges, row
// labels, node outlines and hit areas, selection rings) and is not touched by a step change.
// So a step change repaints one canvas and costs the same at 7B × 28 layers as at 2 layers.
// Pan and zoom are bounded to the graph; a minimap shows where the view is.
import { select, type Selection } from 'd3-selection';
import { zoom, zoomIdentity, type ZoomBehavior, type ZoomTransform } from 'd3-zoom';
import { nodePath, shortName } from '../model/graph-index';
import { COLLAPSED_H, LABEL_W, NODE_H, NODE_W, layoutGraph, type GraphLayout } from '../model/layout';
import type { TraceGraph } from '../model/types';
import { el } from '../ui/dom';
import { Minimap, type MinimapRow } from './minimap';
import { MISSING_FILL, textColor } from './node-colors';
import { NodePainter, type PaintNode } from './node-painter';

export interface NodeStyle { fill: string | null; text: string; noOutput: boolean }
export interface Filters { attention: boolean; ffn: boolean; kv: boolean }

const SVG_NS = 'http://www.w3.org/2000/svg';
const ROW_GAP = 6, SPINE_X = LABEL_W - 18;

export class GraphView {
  readonly root: HTMLElement;
  readonly legendHost: HTMLElement;
  private canvas: HTMLElement;
  private svg: Selection<SVGSVGElement, unknown, null, undefined>;
  private viewport: Selection<SVGGElement, unknown, null, undefined>;
  private zoomer: ZoomBehavior<SVGSVGElement, unknown>;
  private layout: GraphLayout | null = null;
  private graph: TraceGraph | null = null;
  private rowEls: SVGGElement[] = [];
  private collapsed = new Set<string>();
  private boxes = new Map<number, SVGRectElement>();
  private painter: NodePainter;
  private paint = new Map<number, PaintNode>();   // per node: what the canvas draws
  private groups = new Map<number, SVGGElement>();
  private minis = new Map<number, SVGRectElement>();
  private titles = new Map<number, SVGTitleElement>();
  private layouts = new WeakMap<TraceGraph, GraphLayout>();
  private applied = new Map<number, { fill: string; text: string }>();
  private edgeEls: { from: number; to: number; el: SVGPathElement }[] = [];
  private selected: number | null = null;
  private marked = new Set<number>();
  private filters: Filters = { attention: true, ffn: true, kv: true };
  private query = '';
  private totalHeight = 0;
  private rowY: number[] = [];
  private rowShown: boolean[] = [];
  private pending: Map<number, NodeStyle> | null = null;   // latest styles, for rows not shown yet
  private transform: ZoomTransform = zoomIdentity;
  private cullQueued = false;
  readonly minimap: Minimap;

  constructor(private onSelect: (id: number) => void) {
    this.legendHost = el('div', { class: 'graph-legend-host' });
    this.svg = select(document.createElementNS(SVG_NS, 'svg') as SVGSVGElement).attr('class', 'graph-svg');
    this.painter = new NodePainter();
    this.canvas = el('div', { class: 'graph-canvas' }, this.painter.canvas, this.svg.node()!);
    this.minimap = new Minimap((x, y) => this.panTo(x, y));
    // The legend host is placed by the app above both the operator graph and the pipeline view.
    this.root = el('div', { class: 'graph-view' }, el('div', { class: 'graph-stage' }, this.canvas, this.minimap.root));
    const defs = this.svg.append('defs');
    const hatch = defs.append('pattern').attr('id', 'hatch').attr('width', 6).attr('height', 6).attr('patternUnits', 'userSpaceOnUse')
      .attr('patternTransform', 'rotate(45)');
    hatch.append('rect').attr('width', 6).attr('height', 6).attr('fill', '#f3f3f3');
    hatch.append('line').attr('x1', 0).attr('y1', 0).attr('x2', 0).attr('y2', 6).attr('stroke', '#c9c9c9').attr('stroke-width', 2);
    defs.append('marker').attr('id', 'arrow').attr('viewBox', '0 0 8 8').attr('refX', 7).attr('refY', 4).attr('markerWidth', 6)
      .attr('markerHeight', 6).attr('orient', 'auto').append('path').attr('d', 'M0,0 L8,4 L0,8 z').attr('fill', '#9aa4b1');
    this.viewport = this.svg.append('g').attr('class', 'viewport');
    this.zoomer = zoom<SVGSVGElement, unknown>().scaleExtent([0.04, 4]).on('zoom', (e) => {
      this.transform = e.transform;
      this.viewport.attr('transform', e.transform.toString());
      // Too small to read: drop the value labels (also spares their layout on every step).
      this.svg.classed('far', e.transform.k < 0.42);
      this.queueCull();
      this.queuePaint();
    });
    this.svg.call(this.zoomer).on('dblclick.zoom', null);
  }

  // Draws the graph unless one of the same structure is already drawn (prefill and decode
  // graphs share it; only shapes differ, which only the tooltips show).
  setGraph(g: TraceGraph): boolean {
    if (this.graph === g) return false;
    this.graph = g;
    let layout = this.layouts.get(g);
    if (!layout) { layout = layoutGraph(g); this.layouts.set(g, layout); }
    if (this.layout && this.layout.signature === layout.signature) {
      for (const [id, t] of this.titles) t.textContent = tooltip(g, id);
      return false;
    }
    this.layout = layout;
    this.render(g, layout);
    return true;
  }

  private render(g: TraceGraph, layout: GraphLayout): void {
    this.viewport.selectAll('*').remove();
    this.applied.clear();
    this.boxes.clear(); this.paint.clear(); this.groups.clear(); this.minis.clear(); this.titles.clear();
    this.edgeEls = []; this.rowEls = []; this.rowShown = []; this.pending = null;
    const spine = this.viewport.append('path').attr('class', 'spine');
    layout.rows.forEach((row, ri) => {
      const rg = this.viewport.append('g').attr('class', 'row').attr('data-row', row.key);
      this.rowEls.push(rg.node()!);
      this.rowShown.push(true);
      rg.append('rect').attr('class', `row-bg${ri % 2 ? ' odd' : ''}`).attr('x', 0).attr('y', 0).attr('width', layout.width).attr('height', row.height);
      const label = rg.append('g').attr('class', 'row-label').on('click', () => this.toggleRow(row.key));
      label.append('text').attr('class', 'row-toggle').attr('x', 8).attr('y', 18).text('▾');
      label.append('text').attr('class', 'row-name').attr('x', 22).attr('y', 18).text(row.label);
      label.append('title').text('click to collapse / expand this layer');
      const full = rg.append('g').attr('class', 'row-full');
      const mini = rg.append('g').attr('class', 'row-mini').style('display', 'none');
      for (const e of layout.edges.filter((x) => x.row === ri)) {
        const p = full.append('path').attr('class', `edge${e.skip ? ' skip' : ''}`).attr('d', e.path).attr('marker-end', 'url(#arrow)');
        this.edgeEls.push({ from: e.from, to: e.to, el: p.node()! });
      }
      for (const id of row.nodes) {
        if (!layout.spineIn.includes(id)) continue;
        const p = layout.pos.get(id)!;
        const y2 = p.y + NODE_H / 2;
        full.append('path').attr('class', 'edge spine-in').attr('marker-end', 'url(#arrow)')
          .attr('d', p.rank === 0 ? `M${SPINE_X},${y2} H${p.x}` : `M${SPINE_X},10 H${p.x - 40} C${p.x - 10},10 ${p.x - 30},${y2} ${p.x},${y2}`);
      }
      row.nodes.forEach((id, i) => {
        const p = layout.pos.get(id)!;
        const n = g.nodes[id];
        const ng = full.append('g').attr('class', `node path-${nodePath(n)}`).attr('data-id', id).attr('data-name', n.name)
          .attr('transform', `translate(${p.x},${p.y})`).on('click', () => this.onSelect(id));
        this.groups.set(id, ng.node()!);
        this.titles.set(id, ng.append('title').text(tooltip(g, id)).node() as unknown as SVGTitleElement);
        this.boxes.set(id, ng.append('rect').attr('class', 'node-box').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 5).node()!);
        this.paint.set(id, { x: p.x, y: p.y, name: clip(shortName(n), 19), fill: MISSING_FILL, hatch: false, text: '', color: '#555', dim: false });
        if (layout.spineOut.includes(id)) ng.append('circle').attr('class', 'port-out').attr('cx', NODE_W).attr('cy', NODE_H / 2).attr('r', 3);
        const m = mini.append('rect').attr('class', 'mini').attr('x', LABEL_W + i * 13).attr('y', 8).attr('width', 11).attr('height', 14)
          .on('click', () => { this.toggleRow(row.key); this.onSelect(id); });
        m.append('title').text(n.name);
        this.minis.set(id, m.node()!);
      });
    });
    spine.attr('d', '');
    this.restack();
    this.applyClasses();
  }

  private restack(): void {
    if (!this.layout) return;
    let y = 0;
    this.rowY = [];
    this.layout.rows.forEach((row, ri) => {
      const c = this.collapsed.has(row.key);
      const h = c ? COLLAPSED_H : row.height;
      this.rowY.push(y);
      const g = select(this.rowEls[ri]).attr('transform', `translate(0,${y})`).classed('collapsed', c);
      g.select('.row-bg').attr('height', h);
      (g.select('.row-full').node() as SVGGElement).style.display = c ? 'none' : '';
      (g.select('.row-mini').node() as SVGGElement).style.display = c ? '' : 'none';
      g.select('.row-toggle').text(c ? '▸' : '▾');
      y += h + ROW_GAP;
    });
    this.totalHeight = y;
    this.viewport.select('.spine').attr('d', `M${SPINE_X},4 V${Math.max(4, y - ROW_GAP - 4)}`);
    this.bound();
    this.minimap.setRows(this.minimapRows(), this.layout.width, this.totalHeight);
    this.queueCull();
    this.queuePaint();
  }

  private paintQueued = false;
  private queuePaint(): void {
    if (this.paintQueued) return;
    this.paintQueued = true;
    requestAnimationFrame(() => { this.paintQueued = false; this.repaint(); });
  }

  // Draws the rows in view onto the canvas (synchronously: a step change pays for it at once).
  private repaint(): void {
    if (!this.layout) return;
    const w = this.canvas.clientWidth || 800, h = this.canvas.clientHeight || 600;
    const rows = this.layout.rows.map((row, ri) => ({
      y: this.rowY[ri], height: this.collapsed.has(row.key) ? COLLAPSED_H : row.height, odd: ri % 2 === 1,
      nodes: this.collapsed.has(row.key) || !this.rowShown[ri] ? [] : row.nodes.map((id) => this.paint.get(id)!),
    }));
    this.painter.draw(w, h, this.transform, this.layout.width, rows);
  }

  // Pan and zoom stay on the graph: at most a third of the pane may be empty beyond an edge,
  // and the smallest zoom shows the whole graph.
  private bound(): void {
    if (!this.layout) return;
    const w = this.canvas.clientWidth || 800, h = this.canvas.clientHeight || 600;
    const gw = this.layout.width, gh = Math.max(this.totalHeight, 40);
    const mx = w / 3, my = h / 3;
    this.zoomer.translateExtent([[-mx, -my], [gw + mx, gh + my]]);
    this.zoomer.scaleExtent([Math.min(0.5, 0.9 * Math.min(w / gw, h / gh)), 4]);
  }

  private minimapRows(): MinimapRow[] {
    const l = this.layout!;
    return l.rows.map((row, ri) => ({
      y: this.rowY[ri], height: this.collapsed.has(row.key) ? COLLAPSED_H : row.height,
      nodes: row.nodes.map((id) => ({ id, x: this.collapsed.has(row.key) ? LABEL_W : l.pos.get(id)!.x, y: this.collapsed.has(row.key) ? 8 : l.pos.get(id)!.y })),
    }));
  }

  // Shows the rows that intersect the viewport (plus a margin), hides the others.
  private queueCull(): void {
    if (this.cullQueued) return;
    this.cullQueued = true;
    requestAnimationFrame(() => { this.cullQueued = false; this.cull(); });
  }

  cull(): void {
    if (!this.layout) return;
    const t = this.transform;
    const h = this.canvas.clientHeight || 600, w = this.canvas.clientWidth || 800;
    const top = (0 - t.y) / t.k, bottom = (h - t.y) / t.k, margin = (bottom - top) * 0.5;
    this.layout.rows.forEach((row, ri) => {
      const rh = this.collapsed.has(row.key) ? COLLAPSED_H : row.height;
      const show = this.rowY[ri] + rh >= top - margin && this.rowY[ri] <= bottom + margin;
      if (show === this.rowShown[ri]) return;
      this.rowShown[ri] = show;
      this.rowEls[ri].style.display = show ? '' : 'none';
      if (show && this.pending) this.applyStyles(this.pending, row.nodes);
    });
    this.minimap.setView(-t.x / t.k, -t.y / t.k, w / t.k, h / t.k);
  }

  // Centres the view on a graph point (from the minimap).
  private panTo(x: number, y: number): void {
    const w = this.canvas.clientWidth || 800, h = this.canvas.clientHeight || 600, k = this.transform.k;
    this.svg.call(this.zoomer.transform, zoomIdentity.translate(w / 2 - x * k, h / 2 - y * k).scale(k));
  }

  toggleRow(key: string, collapse?: boolean): void {
    const c = collapse ?? !this.collapsed.has(key);
    if (c) this.collapsed.add(key); else this.collapsed.delete(key);
    this.syncMinis();
    this.restack();
  }

  private syncMinis(): void {
    for (const id of this.pendingMini) {
      if (!this.isCollapsed(id)) continue;
      this.minis.get(id)!.setAttribute('fill', this.paint.get(id)?.fill ?? MISSING_FILL);
      this.pendingMini.delete(id);
    }
  }

  setAllCollapsed(c: boolean): void {
    if (!this.layout) return;
    for (const r of this.layout.rows) if (r.layer >= 0) { if (c) this.collapsed.add(r.key); else this.collapsed.delete(r.key); }
    this.syncMinis();
    this.restack();
  }

  isCollapsed(id: number): boolean {
    const p = this.layout?.pos.get(id);
    return !!p && this.collapsed.has(this.layout!.rows[p.row].key);
  }

  // Per-step restyle: fill, value text and text colour of every node; O(nodes), no layout.
  // Only what changed is written: fewer style recalculations on the next frame.
  restyle(styles: Map<number, NodeStyle>): void {
    this.pending = styles;
    if (!this.layout) return;
    this.layout.rows.forEach((row, ri) => { if (this.rowShown[ri]) this.applyStyles(styles, row.nodes); });
    this.minimap.setFills(styles);
    this.repaint();
  }

  private applyStyles(styles: Map<number, NodeStyle>, ids: number[]): void {
    for (const id of ids) {
      const p = this.paint.get(id);
      if (!p) continue;
      const s = styles.get(id);
      p.fill = s?.fill ?? MISSING_FILL;
      p.hatch = !s?.fill && !!s?.noOutput;
      p.text = s?.text ?? '';
      p.color = s?.fill ? textColor(s.fill) : '#555';
      const fill = s?.fill ?? MISSING_FILL;
      const prev = this.applied.get(id);
      if (prev && prev.fill === fill) continue;
      this.applied.set(id, { fill, text: '' });
      if (this.isCollapsed(id)) this.minis.get(id)!.setAttribute('fill', fill);
      else this.pendingMini.add(id);
    }
  }

  private pendingMini = new Set<number>();

  // The value text the canvas shows on a node (for tests: it is not in the DOM).
  nodeText(id: number): string {
    return this.paint.get(id)?.text ?? '';
  }

  select(id: number | null): void {
    this.selected = id;
    if (id !== null && this.isCollapsed(id)) this.toggleRow(this.layout!.rows[this.layout!.pos.get(id)!.row].key, false);
    this.applyClasses();
  }

  // Marks nodes (e.g. the first divergent one) with a highlight ring.
  mark(ids: number[]): void {
    this.marked = new Set(ids);
    this.applyClasses();
  }

  setFilters(f: Filters): void {
    this.filters = f;
    this.applyClasses();
  }

  // Returns the ids whose name, op or weight type contains the query (case-insensitive), in
  // execution order: "ffn_down", "matmul", "q4_0".
  search(q: string): number[] {
    this.query = q.trim().toLowerCase();
    this.applyClasses();
    return this.query ? [...this.groups.keys()].filter((id) => this.matches(id)) : [];
  }

  private matches(id: number): boolean {
    const n = this.graph!.nodes[id];
    return n.name.toLowerCase().includes(this.query) || n.op.toLowerCase().includes(this.query) ||
      (!!n.weightType && n.weightType.toLowerCase() === this.query);
  }

  private applyClasses(): void {
    if (!this.graph) return;
    for (const [id, g] of this.groups) {
      const n = this.graph.nodes[id];
      const path = nodePath(n);
      const filtered = (path === 'attention' && !this.filters.attention) || (path === 'ffn' && !this.filters.ffn) || (path === 'kv' && !this.filters.kv);
      const match = !!this.query && this.matches(id);
      g.classList.toggle('dim', filtered || (!!this.query && !match));
      const p = this.paint.get(id);
      if (p) p.dim = filtered || (!!this.query && !match);
      g.classList.toggle('match', match);
      g.classList.toggle('selected', id === this.selected);
      g.classList.toggle('marked', this.marked.has(id));
      this.minis.get(id)!.classList.toggle('selected', id === this.selected);
      this.minis.get(id)!.classList.toggle('marked', this.marked.has(id));
    }
    for (const e of this.edgeEls) e.el.classList.toggle('hl', e.from === this.selected || e.to === this.selected);
    this.queuePaint();
  }

  // Fit (f) fills the pane: the whole graph, centred, when at that scale it covers at least
  // half of the pane; otherwise (a deep model: many rows, a wide pane) the graph's full width
  // from the top, with the minimap showing the rest. Fit width: always the latter.
  fit(widthOnly = false): void {
    if (!this.layout) return;
    this.bound();
    const w = this.canvas.clientWidth || 800, h = this.canvas.clientHeight || 600, pad = 10;
    const kw = (w - 2 * pad) / this.layout.width, kh = (h - 2 * pad) / Math.max(1, this.totalHeight);
    const kAll = Math.min(1.2, kw, kh);
    if (!widthOnly && (this.layout.width * kAll * this.totalHeight * kAll) / (w * h) < 0.5) widthOnly = true;
    const k = Math.min(1.2, widthOnly ? kw : kAll);
    const tx = (w - this.layout.width * k) / 2;
    const ty = widthOnly ? pad : (h - this.totalHeight * k) / 2;
    this.svg.call(this.zoomer.transform, zoomIdentity.translate(tx, ty).scale(k));
  }

  // The fraction of the pane the drawn graph covers (the e2e test of `f` reads it).
  coverage(): number {
    if (!this.layout) return 0;
    const w = this.canvas.clientWidth || 1, h = this.canvas.clientHeight || 1, t = this.transform;
    const x0 = Math.max(0, t.x), y0 = Math.max(0, t.y);
    const x1 = Math.min(w, t.x + this.layout.width * t.k), y1 = Math.min(h, t.y + this.totalHeight * t.k);
    return Math.max(0, x1 - x0) * Math.max(0, y1 - y0) / (w * h);
  }

  centerOn(id: number): void {
    const p = this.layout?.pos.get(id);
    if (!p || !this.layout) return;
    const rowY = this.rowY[p.row] ?? 0;
    const w = this.canvas.clientWidth || 800, h = this.canvas.clientHeight || 600;
    const k = Math.max(0.6, Math.min(1.2, w / (this.layout.width + 20)));
    // Along an axis where the whole graph fits, keep it aligned instead of centring the node.
    // Otherwise centre the node, but never pull an edge of the graph inside the view.
    const clamp = (t: number, size: number, view: number) => Math.min(10, Math.max(view - size * k - 10, t));
    const tx = this.layout.width * k + 20 <= w ? 10 : clamp(w / 2 - (p.x + NODE_W / 2) * k, this.layout.width, w);
    const ty = this.totalHeight * k + 20 <= h ? 10 : clamp(h / 2 - (rowY + p.y + NODE_H / 2) * k, this.totalHeight, h);
    this.svg.call(this.zoomer.transform, zoomIdentity.translate(tx, ty).scale(k));
  }

  get nodeCount(): number {
    return this.groups.size;
  }
}

function tooltip(g: TraceGraph, id: number): string {
  const n = g.nodes[id];
  return `${n.name}\nop ${n.op}, shape [${n.shape.join(' × ')}] ${n.dtype}` + (n.weight ? `\nweight ${n.weight} (${n.weightType ?? '?'})` : '') +
    (n.fusedFrom.length ? `\nfused from ${n.fusedFrom.join(', ')}` : '');
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}
