// Paints the operator graph's per-step layer on a canvas: row backgrounds, node boxes filled
// with the colour metric (hatched where a node has no output), the node name and its value.
// Only rows handed in are drawn (the caller passes the rows in view); one draw is a few hundred
// fillRect/fillText calls, cheaper than restyling and repainting as many SVG elements.
import type { ZoomTransform } from 'd3-zoom';
import { NODE_H, NODE_W } from '../model/layout';

export interface PaintNode {
  x: number; y: number;      // within the row
  name: string; fill: string; hatch: boolean; text: string; color: string; dim: boolean;
}

export interface PaintRow { y: number; height: number; odd: boolean; nodes: PaintNode[] }

const FONT_NAME = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif';
const FONT_VAL = '10px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif';

export class NodePainter {
  readonly canvas: HTMLCanvasElement;
  private hatch: CanvasPattern | null = null;

  constructor() {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'graph-paint';
  }

  draw(width: number, height: number, t: ZoomTransform, graphWidth: number, rows: PaintRow[]): void {
    const dpr = window.devicePixelRatio || 1;
    const W = Math.round(width * dpr), H = Math.round(height * dpr);
    if (this.canvas.width !== W || this.canvas.height !== H) { this.canvas.width = W; this.canvas.height = H; }
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.setTransform(dpr * t.k, 0, 0, dpr * t.k, dpr * t.x, dpr * t.y);
    const top = -t.y / t.k, bottom = (height - t.y) / t.k;
    const names = t.k >= 0.25, values = t.k >= 0.42;
    for (const row of rows) {
      if (row.y > bottom || row.y + row.height < top) continue;
      ctx.fillStyle = row.odd ? '#e9eef5' : '#f1f4f8';
      ctx.fillRect(0, row.y, graphWidth, row.height);
      for (const n of row.nodes) {
        const x = n.x, y = row.y + n.y;
        ctx.globalAlpha = n.dim ? 0.16 : 1;
        ctx.fillStyle = n.hatch ? this.hatchPattern(ctx) : n.fill;
        roundRect(ctx, x, y, NODE_W, NODE_H, 5);
        ctx.fill();
        if (names) {
          ctx.fillStyle = n.color;
          ctx.font = FONT_NAME;
          ctx.fillText(n.name, x + 6, y + 14);
          if (values && n.text) { ctx.font = FONT_VAL; ctx.fillText(n.text, x + 6, y + 27, NODE_W - 10); }
        }
      }
      ctx.globalAlpha = 1;
    }
  }

  private hatchPattern(ctx: CanvasRenderingContext2D): CanvasPattern | string {
    if (!this.hatch) {
      const c = document.createElement('canvas');
      c.width = 8; c.height = 8;
      const h = c.getContext('2d')!;
      h.fillStyle = '#f3f3f3'; h.fillRect(0, 0, 8, 8);
      h.strokeStyle = '#c9c9c9'; h.lineWidth = 2;
      h.beginPath(); h.moveTo(0, 8); h.lineTo(8, 0); h.moveTo(-2, 2); h.lineTo(2, -2); h.moveTo(6, 10); h.lineTo(10, 6); h.stroke();
      this.hatch = ctx.createPattern(c, 'repeat');
    }
    return this.hatch ?? '#f3f3f3';
  }
}

function roundRect(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number, r: number): void {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}
