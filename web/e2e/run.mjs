// End-to-end tests of the web app in headless Chromium against a real minfer-viz serving real
// traces (MINFER_VIZ, default build/bin/minfer-viz; MINFER_TRACES, default traces/).
//   node web/e2e/run.mjs            the suite; prints SKIP with the reason when it cannot run
//   node web/e2e/run.mjs --docs     also copies one screenshot per view to docs/screenshots/
//   node web/e2e/run.mjs --mock     against the fixture mock server (development only)
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT, closeBrowser, launchBrowser, skipReason, startServer } from './lib.mjs';

const mock = process.argv.includes('--mock');
const toDocs = process.argv.includes('--docs');
const OUT = join(ROOT, 'web/e2e/out');
const reason = skipReason({ mock });
if (reason) {
  console.log(`SKIP: web e2e suite not run: ${reason}`);
  console.log('0 passed, 0 failed, 1 skipped');
  process.exit(0);
}

// Fixture files for the local-file tests (v1 layout, a broken file): made fresh, never committed.
const fixtures = mkdtempSync(join(tmpdir(), 'minfer-e2e-'));
execFileSync(join(ROOT, 'node_modules/.bin/tsx'), [join(ROOT, 'web/test/fixtures/make-fixtures.ts'), fixtures], { stdio: 'ignore' });
const tracesDir = mock ? fixtures : resolve(ROOT, process.env.MINFER_TRACES ?? 'traces');

mkdirSync(OUT, { recursive: true });
const server = await startServer({ mock, tracesDir });
console.log(`web e2e: ${server.kind} at ${server.url}, traces from ${tracesDir}`);
const browser = await launchBrowser();
const page = await browser.context.newPage();
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });

const results = [];
async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`  ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`  FAIL ${name}: ${e.message}`);
    await page.screenshot({ path: join(OUT, `failed-${name.replace(/\W+/g, '-')}.png`) }).catch(() => {});
  }
}
function check(cond, msg) { if (!cond) throw new Error(msg); }
const shots = [];
async function shot(name) {
  if (await page.$('button:has-text("fit width")')) await page.click('button:has-text("fit width")');   // a tidy graph
  const p = join(OUT, `${name}.png`);
  await page.screenshot({ path: p });
  shots.push(p);
}
async function ready() { await page.waitForSelector('body[data-state="ready"], body[data-state="error"]', { timeout: 30000 }); }
const api = async (path) => (await fetch(server.url + path)).json();

// Counts the painted (non-blank) pixels of a canvas and its distinct colours.
async function canvasInk(selector) {
  return page.$eval(selector, (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0; const colours = new Set();
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0 && !(d[i] > 250 && d[i + 1] > 250 && d[i + 2] > 250)) ink++;
      colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
    return { ink, total: d.length / 4, colours: colours.size, hash: Array.from(d.slice(0, 4000)).join(',') };
  });
}

const list = (await api('api/traces')).filter((e) => !e.error);
check(list.length > 0, 'the server lists no readable trace');
// The smallest readable v2 trace with decode steps is the quickest to inspect.
const single = [...list].filter((e) => (e.steps ?? 0) >= 4 && (e.version ?? 2) === 2 && e.backend !== 'cuda').sort((a, b) => a.size - b.size)[0] ?? list[0];
const pair = (() => {
  for (const a of list) for (const b of list)
    if (a !== b && a.model === b.model && a.backend === b.backend && a.matmul_path === 'mmq' && b.matmul_path === 'f16') return [a.name, b.name];
  return null;
})();

await test('trace list loads', async () => {
  await page.goto(server.url);
  await ready();
  const rows = await page.$$eval('.traces-table a.trace-link', (as) => as.map((a) => a.textContent));
  check(rows.length === list.length, `expected ${list.length} trace links, found ${rows.length}`);
  check(rows.includes(single.name), `${single.name} is not listed`);
  await shot('list');
});

let nodeId = -1;
await test('node click shows stats and a drawn heatmap', async () => {
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}`);
  await ready();
  check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
  await page.waitForSelector('.graph-svg .node');
  // Step 1 (a decode step); a residual-stream node carries the outlier channel.
  await page.evaluate(() => window.minferViz.setStep(1));
  nodeId = await page.evaluate(() => { const v = window.minferViz; for (const n of ['blk.0.attn_residual', 'blk.0.ffn_residual', 'blk.0.attn_q']) { const id = v.findNode(n); if (id >= 0) return id; } return -1; });
  check(nodeId >= 0, 'no blk.0 node found in the graph');
  await page.click(`.graph-svg .node[data-id="${nodeId}"]`);
  await page.waitForSelector('.inspector .stats-table');
  const absmean = await page.textContent('.stats-table tr[data-stat="mean |x|"] td');
  check(/\d/.test(absmean), `mean |x| shows no number: "${absmean}"`);
  const ink = await canvasInk('.inspector .heatmap-canvas');
  check(ink.ink > ink.total * 0.5, `heatmap mostly blank: ${ink.ink}/${ink.total} painted pixels`);
  check(ink.colours > 8, `heatmap has only ${ink.colours} colours`);
  const legend = await page.textContent('.inspector .heatmap .legend-note');
  check(/symmetric-log/.test(legend), `heatmap legend does not name its scale: ${legend}`);
  check((await page.$$('.inspector .histogram rect')).length > 4, 'histogram has no bars');
  await shot('graph-inspector');
});

await test('step slider changes the values', async () => {
  // The graph is drawn once: a step change restyles the same elements.
  await page.evaluate((id) => { window.__probe = document.querySelector(`.graph-svg .node[data-id="${id}"]`); }, nodeId);
  const before = await page.textContent('.stats-table tr[data-stat="mean |x|"] td');
  const inkBefore = await canvasInk('.inspector .heatmap-canvas');
  const labels = () => page.$$eval('.graph-svg .node .node-val', (ts) => ts.map((t) => t.textContent).join('|'));
  const label = await labels();
  await page.focus('#step-slider');
  await page.keyboard.press('ArrowRight');    // the range input moves one step
  await page.waitForFunction(() => document.body.dataset.step === '2');
  const after = await page.textContent('.stats-table tr[data-stat="mean |x|"] td');
  const inkAfter = await canvasInk('.inspector .heatmap-canvas');
  const label2 = await labels();
  check(before !== after, `mean |x| did not change between steps 1 and 2 (${before})`);
  check(inkBefore.hash !== inkAfter.hash, 'the heatmap did not change between steps');
  check(label !== label2, 'no graph node label changed between steps');
  check(/step 2 \//.test(await page.textContent('#step-label')), 'step label not updated');
  check(await page.evaluate(() => window.__probe.isConnected), 'the graph was re-rendered on a step change');
  // The clipped-quantile scale says so in its legend and keeps the outliers (ringed cells).
  await page.selectOption('.inspector .scale-mode', 'quantile');
  check(/99th percentile/.test(await page.textContent('.inspector .heatmap .legend-note')), 'quantile legend missing');
  check((await canvasInk('.inspector .heatmap-canvas')).ink > 0, 'quantile heatmap blank');
  await page.selectOption('.inspector .scale-mode', 'symlog');
  // keyboard: ] moves forward a step, [ back
  await page.click('.graph-svg', { position: { x: 5, y: 5 } });
  await page.keyboard.press(']');
  await page.waitForFunction(() => document.body.dataset.step === '3');
  await page.keyboard.press('[');
  await page.waitForFunction(() => document.body.dataset.step === '2');
});

await test('graph controls: keys, back stack, search, collapse, metric, filters', async () => {
  await page.evaluate((id) => window.minferViz.selectNode(id), nodeId);
  await page.click('.graph-svg', { position: { x: 5, y: 5 } });
  await page.keyboard.press('ArrowRight');
  const next = await page.evaluate(() => Number(document.body.dataset.node));
  check(next > nodeId, `→ did not move to a later node (${nodeId} → ${next})`);
  await page.keyboard.press('Backspace');
  await page.waitForFunction((id) => document.body.dataset.node === String(id), nodeId);
  // space plays the steps, space again pauses
  await page.evaluate(() => window.minferViz.setStep(1));
  await page.keyboard.press(' ');
  await page.waitForFunction(() => Number(document.body.dataset.step) >= 2, null, { timeout: 5000 });
  await page.keyboard.press(' ');
  check(/play/.test(await page.textContent('#play')), 'play button did not return to "play" after pausing');
  // play nodes: walks the nodes in execution order
  await page.selectOption('#play-mode', 'nodes');
  const n0 = await page.evaluate(() => document.body.dataset.node);
  await page.click('.graph-svg', { position: { x: 5, y: 5 } });
  await page.keyboard.press(' ');
  await page.waitForFunction((n) => document.body.dataset.node !== n, n0, { timeout: 5000 });
  await page.keyboard.press(' ');
  await page.selectOption('#play-mode', 'steps');
  await page.fill('#search', 'ffn_down');
  await page.press('#search', 'Enter');
  await page.waitForFunction(() => /ffn_down$/.test(document.querySelector('.inspector .node-title')?.textContent ?? ''));
  check((await page.$$('.graph-svg .node.match')).length >= 1, 'search marked no node');
  await page.press('#search', 'Escape');
  await page.click('text=collapse layers');
  check(await page.$$eval('.graph-svg .row.collapsed', (r) => r.length) >= 1, 'no layer collapsed');
  check(await page.$$eval('.graph-svg .row.collapsed .mini', (m) => m.length) > 5, 'collapsed layers show no summary strip');
  await page.click('text=expand layers');
  check(await page.$$eval('.graph-svg .row.collapsed', (r) => r.length) === 0, 'layers did not expand');
  await page.selectOption('#metric', 'time');
  check(/time \(µs\)/.test(await page.textContent('.graph-legend')), 'legend does not name the time metric and unit');
  await page.selectOption('#metric', 'absmax');
  await page.uncheck('#filter-ffn');
  const dimmed = await page.$$eval('.graph-svg .node.path-ffn', (ns) => ns.every((n) => n.classList.contains('dim')));
  check(dimmed, 'unchecking FFN did not dim the FFN nodes');
  await page.check('#filter-ffn');
});

await test('tokens strip and top-k chart', async () => {
  await page.click('.tab[data-tab="tokens"]');
  await page.waitForSelector('.topk-chart .bar');
  check((await page.$$('.topk-chart .bar')).length >= 3, 'top-k chart has fewer than 3 bars');
  check(/nats/.test(await page.textContent('.topk-head .entropy')), 'entropy shown without its unit');
  const gen = await page.$$('.token-strip .tok.gen');
  check(gen.length >= 3, 'fewer than 3 generated tokens in the strip');
  const target = await gen[gen.length - 1].getAttribute('data-step');
  await gen[gen.length - 1].click();
  await page.waitForFunction((s) => document.body.dataset.step === s, target);
  await page.evaluate(() => window.minferViz.setStep(2));
  await shot('tokens');
});

await test('timings per op type and per node', async () => {
  await page.click('.tab[data-tab="timings"]');
  await page.waitForSelector('.timings-panel .bar-chart');
  check(/µs|ms/.test(await page.textContent('.timings-panel')), 'timings without a unit');
  await shot('timings');
});

await test('kernel tab explains or draws the timeline', async () => {
  await page.click('.tab[data-tab="kernels"]');
  const text = await page.textContent('.kernels-panel');
  check(/kernel/i.test(text), 'kernel tab is empty');
  const cuda = list.find((e) => e.backend === 'cuda');
  if (cuda) {
    await page.goto(`${server.url}?trace=${encodeURIComponent(cuda.name)}`);
    await ready();
    await page.evaluate(() => window.minferViz.setStep(1));
    await page.click('.tab[data-tab="kernels"]');
    await page.waitForSelector('.kernel-timeline rect.kernel');
    await shot('kernels');
  }
});

await test('comparison view shows the first divergent node', async () => {
  check(pair, 'no mmq/f16 pair of the same model among the traces');
  const cmp = await api(`api/compare?a=${encodeURIComponent(pair[0])}&b=${encodeURIComponent(pair[1])}`);
  check(!cmp.error, `server comparison failed: ${cmp.error}`);
  await page.goto(`${server.url}?a=${encodeURIComponent(pair[0])}&b=${encodeURIComponent(pair[1])}`);
  await ready();
  check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
  if (cmp.first_divergent) {
    const shown = await page.textContent('.divergence-banner .divergent-name');
    check(shown === cmp.first_divergent.name, `banner shows "${shown}", server says "${cmp.first_divergent.name}"`);
    await page.click('.tab[data-tab="compare"]');
    await page.click('.goto-divergent');
    await page.waitForFunction((n) => document.querySelector('.inspector .node-title')?.textContent === n, cmp.first_divergent.name);
    check(await page.$(`.graph-svg .node.marked[data-id="${cmp.first_divergent.node}"]`), 'first divergent node not marked in the graph');
    check(/dB/.test(await page.textContent('.inspector')), 'inspector shows no SQNR in dB');
  } else {
    check(/No node diverges/.test(await page.textContent('.divergence-banner')), 'banner does not say that nothing diverged');
    // The closest call is still one click away.
    await page.click('.goto-worst');
    await page.waitForSelector('.inspector .node-title');
    check(/SQNR/.test(await page.textContent('.inspector')), 'inspector shows no SQNR for the closest call');
  }
  check((await page.$$('.agreement-table tr[data-step]')).length === cmp.steps.length, 'token agreement rows != steps');
  await shot('compare');
});

await test('a malformed local file gives a readable message', async () => {
  await page.goto(server.url);
  await ready();
  await page.setInputFiles('input[type=file]', join(fixtures, 'fixture-broken.json'));
  await page.waitForSelector('.error-box');
  const msg = await page.textContent('.error-box');
  check(/fixture-broken\.json/.test(msg) && /not valid JSON/.test(msg), `unexpected message: ${msg}`);
  await shot('error');
});

await test('a version-1 file opens by drag and drop', async () => {
  const text = readFileSync(join(fixtures, 'fixture-v1.json'), 'utf8');
  await page.evaluate((t) => {
    const dt = new DataTransfer();
    dt.items.add(new File([t], 'upstream-v1.json', { type: 'application/json' }));
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, text);
  await page.waitForSelector('.graph-svg .node');
  await ready();
  check(/v1/.test(await page.textContent('.app-header .meta')), 'header does not say v1');
  check(/Version 1 trace/.test(await page.textContent('.warnings')), 'no v1 notice');
  await shot('v1-file');
});

await test('a deep link to a missing trace shows the server error', async () => {
  await page.goto(`${server.url}?trace=no-such-trace.json`);
  await ready();
  check(/no trace named|not found|404/i.test(await page.textContent('.error-box')), 'no readable error');
});

await test('no errors in the browser console', async () => {
  const real = consoleErrors.filter((e) => !/404|Failed to load resource/.test(e));
  check(real.length === 0, real.join('\n'));
});

await closeBrowser(browser);
server.stop();
rmSync(fixtures, { recursive: true, force: true });
if (toDocs) {
  mkdirSync(join(ROOT, 'docs/screenshots'), { recursive: true });
  for (const p of shots) copyFileSync(p, join(ROOT, 'docs/screenshots', p.split('/').pop()));
  console.log(`copied ${shots.length} screenshots to docs/screenshots/`);
}
const failed = results.filter((r) => !r.ok).length;
console.log(`screenshots in ${OUT}`);
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
