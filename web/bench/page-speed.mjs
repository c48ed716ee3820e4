// Page speed of the web app in headless Chromium against minfer-viz (or --mock): time to the
// first painted graph after navigation, step-change time, and JS heap. Prints JSON.
// Step change, two measures:
//   frame_ms: the main-thread cost of the frame that shows the new step — the step change is
//     started at the top of a frame (in requestAnimationFrame) and timed until that frame's
//     style, layout and paint are done (a task queued from the rAF callback runs after them).
//     This is the "fits in one frame (16 ms)" figure. The inspector and the bottom tab follow
//     in the next two frames: details_ms is their cost.
//   to_next_paint_ms: from a step change at a random point of a frame to the next painted
//     frame (the older measure): it includes waiting for vsync, so its floor is ~16.7 ms.
//   node web/bench/page-speed.mjs [--traces DIR] [--trace NAME] [--steps N] [--mock]
// Defaults: MINFER_TRACES or traces/, the largest trace there, 30 step changes.
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ROOT, closeBrowser, launchBrowser, skipReason, startServer } from '../e2e/lib.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const mock = process.argv.includes('--mock');
const tracesDir = resolve(ROOT, arg('--traces', process.env.MINFER_TRACES ?? 'traces'));
if (arg('--traces')) process.env.MINFER_TRACES = tracesDir;
const reason = skipReason({ mock });
if (reason) { console.log(JSON.stringify({ skipped: reason })); process.exit(0); }
const name = arg('--trace') ?? readdirSync(tracesDir).filter((f) => /\.json(\.gz)?$/.test(f))
  .sort((a, b) => statSync(join(tracesDir, b)).size - statSync(join(tracesDir, a)).size)[0];
const nSteps = Number(arg('--steps', '30'));

const server = await startServer({ mock, tracesDir });
const browser = await launchBrowser();
const page = await browser.context.newPage();
const cdp = await browser.context.newCDPSession(page);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const p95 = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * 0.95))]; };
const round = (x) => Math.round(x * 10) / 10;

try {
  // Cold load, then a warm one (HTTP cache, compiled JS): both are reported.
  const loads = [];
  for (let i = 0; i < 2; i++) {
    await page.goto(`${server.url}?trace=${encodeURIComponent(name)}`);
    await page.waitForFunction(() => performance.getEntriesByName('minfer:graph-painted').length > 0 || document.body.dataset.state === 'error', null, { timeout: 60000 });
    const state = await page.evaluate(() => document.body.dataset.state);
    if (state === 'error') throw new Error(await page.textContent('.error-box'));
    loads.push(await page.evaluate(() => Object.fromEntries(['minfer:fetched', 'minfer:parsed', 'minfer:graph-painted']
      .map((m) => [m.replace('minfer:', ''), Math.round(performance.getEntriesByName(m)[0]?.startTime ?? -1)]))));
  }
  const info = await page.evaluate(() => ({ steps: window.minferViz.steps(), nodes: window.minferViz.nodeCount() }));
  // Inspect a node so each step change also redraws the inspector (heatmap, histogram).
  await page.evaluate(() => { const v = window.minferViz; v.selectNode(Math.max(0, v.findNode('blk.0.attn_residual'))); });
  if (await page.evaluate(() => typeof window.minferViz.allStepsLoaded === 'function'))
    await page.waitForFunction(() => window.minferViz.allStepsLoaded(), null, { timeout: 120000 });
  const allLoadedMs = await page.evaluate(() => Math.round(performance.getEntriesByName('minfer:all-steps-loaded')[0]?.startTime ?? -1));
  const times = await page.evaluate(async (n) => {
    const v = window.minferViz, out = { toPaint: [], frame: [], details: [], js: [], parts: {} };
    const nextPaint = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const frame = (fn) => new Promise((r) => requestAnimationFrame(() => { const t0 = performance.now(); fn(); setTimeout(() => r(performance.now() - t0), 0); }));
    const settle = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0)))));
    await nextPaint();
    for (let i = 0; i < n; i++) {
      const target = 1 + ((i * 7) % Math.max(1, v.steps() - 1));
      out.frame.push(await frame(() => v.setStep(target)));
      out.js.push(v.lastStepMs());
      for (const [k, x] of Object.entries(v.lastStepParts())) (out.parts[k] ??= []).push(x);
      await settle();
      out.details.push(v.lastDetailsMs ? v.lastDetailsMs() : 0);
    }
    for (let i = 0; i < n; i++) {
      const target = 1 + ((i * 5) % Math.max(1, v.steps() - 1));
      await new Promise((r) => setTimeout(r, Math.random() * 16));
      const t0 = performance.now();
      v.setStep(target);
      await nextPaint();
      out.toPaint.push(performance.now() - t0);
      await settle();
    }
    return out;
  }, nSteps);
  await cdp.send('HeapProfiler.collectGarbage').catch(() => {});
  const heap = await cdp.send('Runtime.getHeapUsage');
  const perfMem = await page.evaluate(() => performance.memory ? performance.memory.usedJSHeapSize : null);
  console.log(JSON.stringify({
    server: server.kind, trace: name, trace_bytes: statSync(join(tracesDir, name)).size, steps: info.steps, graph_nodes: info.nodes,
    first_graph_paint_ms: { cold: loads[0]['graph-painted'], warm: loads[1]['graph-painted'] },
    all_steps_loaded_ms: allLoadedMs >= 0 ? allLoadedMs : null,
    load_phases_ms_since_navigation: { cold: loads[0], warm: loads[1] },
    step_change_ms: { median_frame: round(median(times.frame)), p95_frame: round(p95(times.frame)),
                      median_details_next_frames: round(median(times.details)), p95_details_next_frames: round(p95(times.details)),
                      median_to_next_paint: round(median(times.toPaint)), p95_to_next_paint: round(p95(times.toPaint)),
                      median_js: round(median(times.js)), max_js: round(Math.max(...times.js)), samples: nSteps,
                      median_js_parts: Object.fromEntries(Object.entries(times.parts).map(([k, xs]) => [k, round(median(xs))])) },
    js_heap_mb: { used: round(heap.usedSize / 2 ** 20), total: round(heap.totalSize / 2 ** 20),
                  // typed arrays (the value grids) live outside the V8 heap: reported separately when Chromium says
                  array_buffers: heap.backingStorageSize === undefined ? null : round(heap.backingStorageSize / 2 ** 20),
                  embedder: heap.embedderHeapUsedSize === undefined ? null : round(heap.embedderHeapUsedSize / 2 ** 20),
                  performance_memory_used: perfMem === null ? null : round(perfMem / 2 ** 20) },
    targets: { first_graph_paint_ms_cold: 1000, step_change_median_frame_ms: 16, js_heap_mb: 500 },
  }, null, 2));
} finally {
  await closeBrowser(browser);
  server.stop();
}
