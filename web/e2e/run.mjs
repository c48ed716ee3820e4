// End-to-end tests of the web app in headless Chromium against a real minfer-viz serving real
// traces (MINFER_VIZ, default build/bin/minfer-viz; MINFER_TRACES, default traces/).
//   node web/e2e/run.mjs            the suite; prints SKIP with the reason when it cannot run
//   node web/e2e/run.mjs --docs     also copies one screenshot per view to docs/screenshots/
//   node web/e2e/run.mjs --mock     against the fixture mock server (development only)
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
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
const badResponses = [];
page.on('response', (r) => { if (r.status() >= 400 && !/no-such-trace|api\/slices\/.*(v1|upstream)/.test(r.url())) badResponses.push(`${r.status()} ${r.url()}`); });

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
// The inspector and the bottom tab follow a step change one and two frames later.
async function details(step) { await page.waitForFunction((s) => document.body.dataset.detailsStep === String(s), step, { timeout: 10000 }); }
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
  await details(1);
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
  // Node values are painted on the canvas under the SVG: read them through the page's hook.
  const labels = () => page.evaluate(() => { const v = window.minferViz; return Array.from({ length: 400 }, (_, i) => v.nodeText(i)).join('|'); });
  const label = await labels();
  await page.focus('#step-slider');
  await page.keyboard.press('ArrowRight');    // the range input moves one step
  await page.waitForFunction(() => document.body.dataset.step === '2');
  await details(2);
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
  await details(1);
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
  await details(2);
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
    await details(1);
    await page.click('.tab[data-tab="kernels"]');
    await page.waitForSelector('.kernel-timeline rect.kernel');
    await shot('kernels');
  }
});


await test('fit fills the pane; pan/zoom stay on the graph; minimap moves the view', async () => {
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}`);
  await ready();
  await page.click('.graph-legend-host');
  await page.keyboard.press('f');
  await page.waitForTimeout(100);
  const cov = await page.evaluate(() => window.minferViz.graphCoverage());
  check(cov > 0.5, `f fills only ${(cov * 100).toFixed(0)} % of the pane`);
  // Zooming far out or panning far away cannot leave an empty pane.
  const box = await page.$eval('.graph-svg', (e) => { const r = e.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; });
  await page.mouse.move(box.x, box.y);
  for (let i = 0; i < 15; i++) await page.mouse.wheel(0, 800);
  await page.waitForTimeout(100);
  check(await page.evaluate(() => window.minferViz.graphCoverage()) > 0.05, 'wheel zoom out left an (almost) empty pane');
  await page.mouse.move(box.x, box.y); await page.mouse.down(); await page.mouse.move(box.x + 3000, box.y + 3000, { steps: 5 }); await page.mouse.up();
  check(await page.evaluate(() => window.minferViz.graphCoverage()) > 0.05, 'panning left an empty pane');
  check(await page.$('.minimap canvas'), 'no minimap');
  const t0 = await page.$eval('.graph-svg .viewport', (g) => g.getAttribute('transform'));
  const mm = await page.$eval('.minimap canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
  await page.mouse.click(mm.x + mm.w / 2, mm.y + mm.h * 0.9);
  const t1 = await page.$eval('.graph-svg .viewport', (g) => g.getAttribute('transform'));
  check(t0 !== t1, 'clicking the minimap did not move the view');
});

await test('bottom panel resizes; header metadata expands; search finds ops; favicon', async () => {
  const h0 = await page.$eval('.bottom', (b) => b.getBoundingClientRect().height);
  const sp = await page.$eval('.splitter', (e) => { const r = e.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; });
  await page.mouse.move(sp.x, sp.y); await page.mouse.down(); await page.mouse.move(sp.x, sp.y - 150, { steps: 4 }); await page.mouse.up();
  const h1 = await page.$eval('.bottom', (b) => b.getBoundingClientRect().height);
  check(h1 > h0 + 100, `dragging the splitter did not grow the bottom panel (${h0} → ${h1} px)`);
  const title = await page.getAttribute('.app-header .meta', 'title');
  check(/prompt/.test(title ?? ''), `header metadata has no full-text tooltip: ${title}`);
  await page.click('.app-header .meta');
  check(await page.$('.app-header.expanded'), 'clicking the header metadata does not expand it');
  const wrapped = await page.$eval('.app-header .meta', (m) => m.scrollWidth <= m.clientWidth + 1);
  check(wrapped, 'expanded header metadata is still cut off');
  await page.click('.app-header .meta');
  await page.fill('#search', 'matmul');
  const hits = await page.textContent('.search-hits');
  check(Number(/(\d+)/.exec(hits)?.[1] ?? 0) >= 7, `search "matmul" found ${hits}`);
  await page.press('#search', 'Enter');
  check(/matmul/.test(await page.textContent('.inspector .badge')), 'Enter on an op search did not select a matmul node');
  await page.press('#search', 'Escape');
  const icon = await fetch(server.url + 'favicon.svg');
  check(icon.ok && /svg/.test(icon.headers.get('content-type') ?? ''), `favicon.svg: ${icon.status}`);
});

await test('deep links hold the trace, step, node and view', async () => {
  await page.evaluate(() => window.minferViz.setStep(3));
  const id = await page.evaluate(() => window.minferViz.findNode('blk.1.ffn_down'));
  await page.evaluate((i) => window.minferViz.selectNode(i), id);
  await page.waitForFunction(() => /step=3/.test(location.search) && /node=blk\.1\.ffn_down/.test(location.search));
  const url = page.url();
  await page.goto(server.url);
  await ready();
  await page.goto(url);
  await ready();
  check(await page.evaluate(() => document.body.dataset.step) === '3', 'deep link did not restore the step');
  await page.waitForSelector('.inspector .node-title');
  check(await page.textContent('.inspector .node-title') === 'blk.1.ffn_down', 'deep link did not restore the node');
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}&step=2&view=pipeline`);
  await ready();
  check(await page.evaluate(() => document.body.dataset.view) === 'pipeline', 'view=pipeline did not open the pipeline');
});

await test('pipeline view: stages from the graph, drill-down to operators', async () => {
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}&step=1`);
  await ready();
  await page.click('#view-pipeline');
  await page.waitForSelector('.pipeline-view .pl-box');
  const layers = await page.evaluate(() => new Set([...document.querySelectorAll('.graph-svg .row')].map((r) => r.dataset.row).filter((k) => /^L\d+$/.test(k))).size);
  const kinds = await page.$$eval('.pipeline-view .pl-box', (bs) => bs.map((b) => b.dataset.kind));
  for (const k of ['input', 'embedding', 'final_norm', 'lm_head', 'sampler'])
    check(kinds.includes(k), `no ${k} stage`);
  check(kinds.filter((k) => k === 'attention').length === layers, `${kinds.filter((k) => k === 'attention').length} attention stages for ${layers} layers`);
  check(kinds.filter((k) => k === 'ffn_residual').length === layers, 'one +Residual after each FFN expected');
  check(/\d+ × \d+/.test(await page.textContent('.pipeline-view .pl-col-head')), 'stage heads show no shape');
  check(/Q\d|F16|F32|BF16/.test(await page.textContent('.pipeline-view')), 'no weight types shown');
  await page.click('.pl-box[data-stage="L1.ffn"]');
  await page.waitForSelector('.inspector .stage-title');
  check(/FFN · layer 1/.test(await page.textContent('.inspector .stage-title')), 'stage details not shown');
  check(/µs|ms/.test(await page.textContent('.inspector .stage-details')), 'stage time without unit');
  await shot('pipeline');
  await page.click('.inspector .pl-ops .node-link:has-text("ffn_down")');
  await page.waitForFunction(() => document.body.dataset.view === 'ops');
  check(/ffn_down/.test(await page.textContent('.inspector .node-title')), 'drill-down did not open the operator');
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
  // Tokens and Timeline show both runs.
  for (const tab of ['tokens', 'kernels']) {
    await page.click(`.tab[data-tab="${tab}"]`);
    const runs = await page.$$eval('#tab-body .ab-block', (bs) => bs.map((b) => b.dataset.run).join(''));
    check(runs === 'AB', `the ${tab} tab shows ${runs || 'no'} run blocks, expected A and B`);
  }
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
  check(/qwen2\.5-0\.5b-instruct/.test(await page.textContent('.app-header .meta')), 'header does not show the v1 model');
  check(/Version 1 trace/.test(await page.textContent('.warnings')), 'no v1 notice');
  // layers as rows, shapes as tokens × features, the weight and its type
  check(await page.$$eval('.graph-svg .row', (rs) => rs.filter((r) => /^L\d+$/.test(r.dataset.row)).length) >= 2, 'v1 layers are not rows');
  await page.evaluate(() => window.minferViz.setStep(0));
  const q = await page.evaluate(() => window.minferViz.findNode('matmul_blk.0.attn_q.weight'));
  check(q >= 0, 'no matmul_blk.0.attn_q.weight node');
  await page.evaluate((i) => window.minferViz.selectNode(i), q);
  const props = await page.textContent('.inspector table.kv');
  check(/\[7 × 64\] \(token rows × features\)/.test(props), `v1 shape not tokens × features: ${props}`);
  check(/blk\.0\.attn_q\.weight \(Q8_0\)/.test(props), 'v1 weight / type not shown');
  const layerCell = await page.$$eval('.inspector table.kv tr', (rs) => rs.find((r) => r.querySelector('th')?.textContent === 'layer')?.querySelector('td')?.textContent);
  check(layerCell === '0', `v1 layer not read from meta.layer: "${layerCell}"`);
  await page.evaluate(() => window.minferViz.setStep(2));
  await details(2);
  await page.click('.tab[data-tab="tokens"]');
  check(/#\d+/.test(await page.textContent('.topk-chart')), 'v1 top-k without text does not show #id');
  await shot('v1-file');
});

await test('a deep link to a missing trace shows the server error', async () => {
  await page.goto(`${server.url}?trace=no-such-trace.json`);
  await ready();
  check(/no trace named|not found|404/i.test(await page.textContent('.error-box')), 'no readable error');
});


// ----- live runs: a second server with --model and a tiny model made by minfer-gen ---------
const genBin = join(dirname(resolve(ROOT, process.env.MINFER_VIZ ?? 'build/bin/minfer-viz')), 'minfer-gen');
const samplePrompt = '<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n';
if (mock || !existsSync(genBin) || !existsSync(join(tracesDir, 'tiny-q8_0-f16.json'))) {
  console.log(`  SKIP live runs: ${mock ? 'mock server' : !existsSync(genBin) ? `no minfer-gen at ${genBin}` : 'no tiny-q8_0-f16.json sample trace to compare with'}`);
} else {
  const liveDir = mkdtempSync(join(tmpdir(), 'minfer-live-'));
  const model = join(liveDir, 'tiny-q8_0.gguf');
  execFileSync(genBin, ['--preset', 'tiny', '--weights', 'q8_0', '--seed', '1', '-o', model], { stdio: 'ignore' });
  mkdirSync(join(liveDir, 'traces'));
  copyFileSync(join(tracesDir, 'tiny-q8_0-f16.json'), join(liveDir, 'traces', 'tiny-q8_0-f16.json'));
  const ls = await startServer({ mock: false, tracesDir: join(liveDir, 'traces'), extraArgs: ['--model', model] });
  const post = async (path, body) => { const r = await fetch(ls.url + path, { method: 'POST', body: JSON.stringify(body) }); return { status: r.status, body: await r.json() }; };

  await test('live run: prompt in the page, graph lights up, tokens arrive, trace saved, compared', async () => {
    await page.goto(ls.url);
    await ready();
    await page.waitForSelector('#run-panel');
    await page.fill('#run-prompt', samplePrompt);
    await page.fill('#run-max-tokens', '24');
    await page.fill('#run-temperature', '0');
    await page.fill('#run-repeat-penalty', '1.3');
    await page.click('#run-go');
    await page.waitForSelector('#live-banner');
    await page.waitForFunction(() => document.body.dataset.live === 'done', null, { timeout: 60000 });
    const text = await page.textContent('#live-banner');
    check(/Done: 24 step\(s\), 24 token\(s\)/.test(text), `banner: ${text}`);
    const saved = /saved as (live-[\w.-]+\.json)/.exec(text)?.[1];
    check(saved, 'the banner names no saved trace');
    const lit = await page.evaluate(() => { const v = window.minferViz; let n = 0; for (let i = 0; i < 60; i++) if (v.nodeText(i)) n++; return n; });
    check(lit >= 20, `only ${lit} graph nodes show a value after the run`);
    check((await page.$$('.token-strip .tok.gen')).length === 24, 'the tokens did not all arrive');
    const list = await (await fetch(ls.url + 'api/traces')).json();
    const entry = list.find((e) => e.name === saved);
    check(entry && !entry.error && entry.steps === 24 && entry.complete, `saved trace not listed as a complete 24-step trace: ${JSON.stringify(entry)}`);
    // The same prompt, model and sampler as the f16 sample: compare the live run with it.
    await page.selectOption('.live-compare-with', 'tiny-q8_0-f16.json');
    await page.click('.live-compare');
    await ready();
    check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
    check(await page.$('.divergence-banner'), 'the comparison of the live run did not open');
    check(/live-tiny/.test(await page.textContent('.app-header .trace-name')), 'the comparison is not of the live run');
  });

  await test('live run: mid-run view, cancel, bad requests get JSON errors', async () => {
    await page.goto(ls.url);
    await ready();
    await page.fill('#run-max-tokens', '3000');
    await page.click('#run-go');
    await page.waitForFunction(() => Number(document.body.dataset.liveStep ?? -1) >= 8, null, { timeout: 60000 });
    // one run at a time
    const busy = await post('api/run', { prompt: 'hi', max_tokens: 4 });
    check(busy.status === 409 && /busy/.test(busy.body.error), `a second run: ${busy.status} ${JSON.stringify(busy.body)}`);
    await page.waitForTimeout(300);
    const litMid = await page.evaluate(() => { const v = window.minferViz; let n = 0; for (let i = 0; i < 60; i++) if (v.nodeText(i)) n++; return n; });
    check(litMid >= 20, `mid-run, only ${litMid} nodes are lit`);
    await shot('run-live');
    await page.click('.live-cancel');
    await page.waitForFunction(() => document.body.dataset.live === 'done', null, { timeout: 30000 });
    check(/Cancelled/.test(await page.textContent('#live-banner')), 'cancel did not stop the run');
    for (const [body, want] of [[{ model: 'nope.gguf', prompt: 'hi' }, /unknown model 'nope\.gguf'/], [{ prompt: 'hi', max_tokens: 0 }, /max_tokens/],
      [{ prompt: 'hi', max_tokens: 1e9 }, /max_tokens/], [{ prompt: '' }, /prompt' is empty/], [{ prompt: 'hi', temperature: -1 }, /temperature/],
      [{ prompt: 'hi '.repeat(3000), max_tokens: 4000 }, /exceeds the model's context|context/], [{ prompt: 'hi', matmul_path: 'x' }, /matmul_path/]]) {
      const r = await post('api/run', body);
      check(r.status === 400 && want.test(r.body.error ?? ''), `${JSON.stringify(body).slice(0, 60)} → ${r.status} ${JSON.stringify(r.body)}`);
    }
    const bad = await fetch(ls.url + 'api/run', { method: 'POST', body: '{not json' });
    check(bad.status === 400, 'non-JSON body was not a 400');
    check((await fetch(ls.url + 'api/health')).ok, 'the server stopped serving after bad requests');
    const v = await (await fetch(ls.url + 'api/vocab?model=tiny-q8_0.gguf&ids=9707,1879')).json();
    check(v.tokens?.['9707'] === 'Hello' && v.tokens?.['1879'] === ' world', `vocab lookup: ${JSON.stringify(v)}`);
  });
  await test('a v1 trace gets its top-k texts from the served model\'s vocabulary', async () => {
    const doc = JSON.parse(readFileSync(join(fixtures, 'fixture-v1.json'), 'utf8'));
    doc.model = 'tiny-q8_0.gguf';
    await page.goto(ls.url);
    await ready();
    await page.evaluate((t) => {
      const dt = new DataTransfer();
      dt.items.add(new File([t], 'upstream-v1-vocab.json', { type: 'application/json' }));
      document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, JSON.stringify(doc));
    await ready();
    await page.evaluate(() => window.minferViz.setStep(2));
    await details(2);
    await page.waitForFunction(() => !/shown as #id/.test(document.querySelector('.warnings')?.textContent ?? 'shown as #id'), null, { timeout: 10000 })
      .catch(() => { throw new Error('the #id warning stayed: the vocabulary did not fill the texts'); });
    await details(2);
    await page.click('.tab[data-tab="tokens"]');
    const chart = await page.textContent('.topk-chart');
    check(!/#(\d+)\s+#\1\b/.test(chart), `top-k still shows #id without text: ${chart.slice(0, 120)}`);
  });

  // Without --model the live endpoints say so.
  const off = await fetch(server.url + 'api/run/models');
  await test('without --model the Run panel is absent and the API says live runs are off', async () => {
    const ob = await off.json();
    check(off.ok && ob.enabled === false && ob.models.length === 0 && /live runs are off/.test(ob.reason), `api/run/models without --model: ${off.status} ${JSON.stringify(ob)}`);
    const p = await fetch(server.url + 'api/run', { method: 'POST', body: '{"prompt":"hi"}' });
    check(p.status === 404 && /live runs are off/.test((await p.json()).error), `POST api/run without --model: ${p.status}`);
    await page.goto(server.url);
    await ready();
    check(!(await page.$('#run-panel')), 'a Run panel without --model');
  });
  ls.stop();
  rmSync(liveDir, { recursive: true, force: true });
}

await test('no errors in the browser console', async () => {
  const real = consoleErrors.filter((e) => !/404|Failed to load resource/.test(e));
  check(real.length === 0, real.join('\n'));
  // No failed request other than the deliberately missing trace (a favicon 404 was one).
  check(badResponses.length === 0, `failed requests: ${badResponses.join(', ')}`);
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
