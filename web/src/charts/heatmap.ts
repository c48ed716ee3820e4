// Heatmap of a value grid on a canvas, with a legend bar that states the scale, the strides
// and what the axes are. Non-finite cells are bright green; clipped cells get a ring.
import type { ValueGrid } from '../model/types';
import { el } from '../ui/dom';
import { fmtNum } from '../ui/format';
import { divergingColor, legendPosition, valueScale, type ValueScale, type ValueScaleMode } from './color-scales';

export interface HeatmapOptions {
  width: number; mode: ValueScaleMode; title?: string;
  scaleValues?: Float32Array;   // build the colour scale from these (several grids sharing one scale)
  fullMaxAbs?: number;          // max |x| of the full tensor(s): the range covers it
  unit?: string;                // what the colours mean (default: activation units, blue < 0 < red)
}

export function heatmap(grid: ValueGrid, opts: HeatmapOptions): HTMLElement {
  const scale = valueScale(opts.scaleValues ?? grid.values, opts.mode, opts.fullMaxAbs ?? 0);
  const cell = Math.max(2, Math.min(14, Math.floor(opts.width / grid.cols)));
  const cellH = grid.rows === 1 ? 22 : Math.max(3, Math.min(20, Math.floor(160 / grid.rows)));
  const w = cell * grid.cols, h = cellH * grid.rows;
  const canvas = el('canvas', { class: 'heatmap-canvas', width: w, height: h, 'data-rows': grid.rows, 'data-cols': grid.cols });
  const ctx = canvas.getContext('2d')!;
  let clipped = 0, nonFinite = 0;
  for (let r = 0; r < grid.rows; r++)
    for (let c = 0; c < grid.cols; c++) {
      const v = grid.values[r * grid.cols + c];
      ctx.fillStyle = scale.color(v);
      ctx.fillRect(c * cell, r * cellH, cell, cellH);
      if (!Number.isFinite(v)) nonFinite++;
      else if (scale.clipped(v)) {
        clipped++;
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 1;
        ctx.strokeRect(c * cell + 0.5, r * cellH + 0.5, cell - 1, cellH - 1);
      }
    }
  const readout = el('div', { class: 'heatmap-readout', text: 'hover a cell for its value' });
  canvas.addEventListener('mousemove', (e) => {
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor(((e.clientX - rect.left) / rect.width) * grid.cols), r = Math.floor(((e.clientY - rect.top) / rect.height) * grid.rows);
    if (r < 0 || c < 0 || r >= grid.rows || c >= grid.cols) return;
    const v = grid.values[r * grid.cols + c];
    readout.textContent = grid.flattened
      ? `element ${fmtNum(c * grid.colStride)} of ${grid.shape[1]}: ${fmtNum(v, 5)}`
      : `token row ${r * grid.rowStride}, feature ${c * grid.colStride}: ${fmtNum(v, 5)}`;
  });
  const strideText = grid.flattened
    ? `every ${grid.colStride}th element of the flattened tensor (${grid.shape[1]} elements) — ${grid.cols} samples`
    : `rows: token ${grid.rows === 1 ? '0' : `0…${(grid.rows - 1) * grid.rowStride}`} (stride ${grid.rowStride}) of ${grid.shape[0]}; ` +
      `columns: feature 0…${(grid.cols - 1) * grid.colStride} (stride ${grid.colStride}) of ${grid.shape[1]}`;
  return el('div', { class: 'heatmap' },
    opts.title ? el('div', { class: 'heatmap-title', text: opts.title }) : null,
    el('div', { class: 'heatmap-scroll' }, canvas),
    legendBar(scale, Math.min(Math.max(w, 240), opts.width)),
    el('div', { class: 'legend-note', text: `Colour: ${scale.describe}. ${opts.unit ?? 'Blue < 0 < red (activation units).'}` +
      (clipped ? ` ${clipped} cell(s) beyond the clip.` : '') + (nonFinite ? ` ${nonFinite} NaN/Inf cell(s) in green.` : '') }),
    el('div', { class: 'legend-note', text: `Grid ${grid.rows}×${grid.cols}, ${strideText}.` }),
    readout);
}

function legendBar(scale: ValueScale, width: number): HTMLElement {
  const canvas = el('canvas', { class: 'legend-bar', width, height: 10 });
  const ctx = canvas.getContext('2d')!;
  for (let x = 0; x < width; x++) {
    ctx.fillStyle = divergingColor(x / (width - 1));   // the bar is the scale's own range
    ctx.fillRect(x, 0, 1, 10);
  }
  const ticks = scale.mode === 'symlog' ? [-scale.limit, -scale.constant, 0, scale.constant, scale.limit] : [-scale.limit, 0, scale.limit];
  const labels = el('div', { class: 'legend-ticks', style: `width:${width}px` });
  for (const v of ticks)
    labels.append(el('span', { style: `left:${(legendPosition(scale, v) * 100).toFixed(1)}%`, text: fmtNum(v, 3) }));
  return el('div', { class: 'legend' }, canvas, labels);
}
