// The graph's overview: every row and node as a small box in the corner of the graph pane,
// filled with the node's current colour, and the viewport as a frame. Click or drag in it to
// move the view there. Drawn on a canvas: a redraw is a few hundred fillRects.
import { NODE_H, NODE_W } from '../model/layout';
import { el } from '../ui/dom';
import { MISSING_FILL } from './node-colors';

export interface MinimapRow { y: number; height: number; nodes: { id: number; x: number; y: number }[] }

const MAX_W = 160, MAX_H = 200;

export class Minimap {
  readonly root: HTMLElement;
  private canvas: HTMLCanvasElement;
  private rows: MinimapRow[] = [];
  private fills = new Map<number, string>();
  private gw = 1; private gh = 1; private scale = 1;
  private view = { x: 0, y: 0, w: 0, h: 0 };
  private queued = false;

  constructor(private onPan: (x: number, y: number) => void) {
    this.canvas = el('canvas', { class: 'minimap-canvas', width: MAX_W, height: 60 });
    this.root = el('div', { class: 'minimap', title: 'overview: click or drag to move the view' }, this.canvas);
    let dragging = false;
    const pan = (e: PointerEvent) => {
      const r = this.canvas.getBoundingClientRect();
      this.onPan((e.clientX - r.left) / this.scale, (e.clientY - r.top) / this.scale);
    };
    this.canvas.addEventListener('pointerdown', (e) => { dragging = true; this.canvas.setPointerCapture(e.pointerId); pan(e); e.stopPropagation(); });
    this.canvas.addEventListener('pointermove', (e) => { if (dragging) pan(e); });
    this.canvas.addEventListener('pointerup', () => { dragging = false; });
    this.canvas.addEventListener('wheel', (e) => e.stopPropagation());
  }

  setRows(rows: MinimapRow[], width: number, height: number): void {
    this.rows = rows;
    this.gw = Math.max(1, width); this.gh = Math.max(1, height);
    this.scale = Math.min(MAX_W / this.gw, MAX_H / this.gh);
    this.canvas.width = Math.max(20, Math.round(this.gw * this.scale));
    this.canvas.height = Math.max(20, Math.round(this.gh * this.scale));
    this.queue();
  }

  setFills(styles: Map<number, { fill: string | null }>): void {
    this.fills.clear();
    for (const [id, s] of styles) if (s.fill) this.fills.set(id, s.fill);
    this.queue();
  }

  setView(x: number, y: number, w: number, h: number): void {
    this.view = { x, y, w, h };
    this.queue();
  }

  // The box of the viewport in minimap pixels (for tests).
  viewBox(): { x: number; y: number; w: number; h: number } {
    const s = this.scale;
    return { x: this.view.x * s, y: this.view.y * s, w: this.view.w * s, h: this.view.h * s };
  }

  private queue(): void {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => { this.queued = false; this.draw(); });
  }

  private draw(): void {
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    const s = this.scale;
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    this.rows.forEach((row, i) => {
      ctx.fillStyle = i % 2 ? '#e3e9f1' : '#eef2f7';
      ctx.fillRect(0, row.y * s, this.canvas.width, Math.max(1, row.height * s));
      const nw = Math.max(1.5, NODE_W * s), nh = Math.max(1.5, NODE_H * s);
      for (const n of row.nodes) {
        ctx.fillStyle = this.fills.get(n.id) ?? MISSING_FILL;
        ctx.fillRect(n.x * s, (row.y + n.y) * s, nw, nh);
      }
    });
    const v = this.viewBox();
    ctx.strokeStyle = '#2f6fd6';
    ctx.lineWidth = 2;
    ctx.strokeRect(Math.max(1, v.x), Math.max(1, v.y), Math.min(this.canvas.width - 2, v.w), Math.min(this.canvas.height - 2, v.h));
  }
}
