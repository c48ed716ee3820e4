// End-to-end tests of the web app in headless Chromium against a real minfer-viz serving real
// traces (MINFER_VIZ, default build/bin/minfer-viz; MINFER_TRACES, default traces/).
//   node web/e2e/run.mjs            the suite; prints SKIP with the reason when it cannot run
//   node web/e2e/run.mjs --docs     also copies one screenshot per view to docs/screenshots/
//   node web/e2e/run.mjs --mock     against the fixture mock server (development only)
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
page.on('response', (r) => { if (r.status() >= 400 && !/no-such-trace|steps-twice/.test(r.url())) badResponses.push(`${r.status()} ${r.url()}`); });

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

// WCAG contrast ratio of an element's text against its background (computed colours).
async function textContrast(selector) {
  return page.$eval(selector, (e) => {
    const cs = getComputedStyle(e);
    const lum = (c) => {
      const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map((v) => { const x = Number(v) / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [a, b] = [lum(cs.color), lum(cs.backgroundColor)].sort((x, y) => y - x);
    return { ratio: (a + 0.05) / (b + 0.05), text: e.textContent, color: cs.color, background: cs.backgroundColor };
  });
}

const list = (await api('api/traces')).filter((e) => !e.error);
check(list.length > 0, 'the server lists no readable trace');
// The smallest readable v2 qwen2 trace with decode steps is the quickest to inspect (the other
// families' samples have their own test below).
const isQwen2 = (e) => !e.architecture || e.architecture === 'qwen2';
const single = [...list].filter((e) => (e.steps ?? 0) >= 4 && (e.version ?? 2) >= 2 && !e.compare_path && e.backend !== 'cuda' && isQwen2(e)).sort((a, b) => a.size - b.size)[0] ?? list[0];
// One sample trace of each other model family (qwen3, llama), when the folder has them.
const familySamples = [...new Map(list.filter((e) => !isQwen2(e) && !e.compare_path).map((e) => [e.architecture, e])).values()];
// Separate MMQ and float recordings of one model and prompt on one backend (the float path is
// `f32` on cpu, `f16` on cuda and in cpu traces before v3), the largest such pair first.
const floatPath = (p) => p === 'f32' || p === 'f16';
const pairOn = (backend) => {
  const found = [];
  for (const a of list) for (const b of list)
    if (a !== b && a.backend === backend && a.model === b.model && a.model_sha256 === b.model_sha256 && a.prompt === b.prompt && a.backend === b.backend &&
        !a.compare_path && !b.compare_path && a.matmul_path === 'mmq' && floatPath(b.matmul_path)) found.push([a, b]);
  found.sort((x, y) => y[0].size - x[0].size);
  return found.length ? [found[0][0].name, found[0][1].name] : null;
};
const pair = pairOn('cpu') ?? pairOn('cuda');
const cudaPair = pairOn('cuda');

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
  const cuda = list.find((e) => e.backend === 'cuda' && !/nocupti/.test(e.name));   // one with kernel records
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


// ----- CUDA traces: GPU time colour, kernel timeline, GPU timings -----------------------------
// On the synthetic CUDA v3 fixture (served by a second server over a folder of its own) and on
// every recorded CUDA sample in the traces folder. Expected figures come from the trace JSON the
// server sends, recomputed here.
const cudaDir = mkdtempSync(join(tmpdir(), 'minfer-cuda-'));
for (const f of ['fixture-cuda-v3.json', 'fixture-cuda-v3-nocupti.json']) copyFileSync(join(fixtures, f), join(cudaDir, f));
const cudaServer = await startServer({ mock, tracesDir: cudaDir });
// Screenshot names: the recorded MMQ sample's are the plain ones (graph-gpu-time.png ..., the docs'),
// the float sample's end in -f16, the fixture's in -fixture.
const cudaRuns = [{ srv: cudaServer, name: 'fixture-cuda-v3.json', tag: '-fixture' },
  ...list.filter((e) => e.backend === 'cuda' && /^qwen.*cuda/.test(e.name)).slice(0, 2).map((e) => ({ srv: server, name: e.name, tag: e.matmul_path === 'mmq' ? '' : `-${e.matmul_path}` }))];
const fmt3 = (us) => String(Number((us >= 1000 ? us / 1000 : us).toPrecision(3)));
// Kernel records of a step: the whole file, or the step's slice when the server has slices.
async function cudaDoc(srv, name) {
  return (await fetch(`${srv.url}api/traces/${encodeURIComponent(name)}`)).json();
}
// Screenshots of the bottom tabs: a taller panel, scrolled to the top, the pointer left where it is.
async function tallShot(name, hover) {
  await page.evaluate(() => { document.querySelector('.bottom').style.height = '470px'; document.getElementById('tab-body').scrollTop = 0; });
  if (await page.$('button:has-text("fit width")')) await page.click('button:has-text("fit width")');
  if (hover) await hover();
  const p = join(OUT, `${name}.png`);
  await page.screenshot({ path: p });
  shots.push(p);
}
function busyNs(ks) {
  const iv = ks.map((k) => [k.start_ns, k.start_ns + k.duration_ns]).sort((a, b) => a[0] - b[0]);
  let busy = 0, end = -Infinity, gaps = 0, maxGap = 0;
  for (const [a, b] of iv) {
    if (a > end && end > -Infinity) { gaps++; maxGap = Math.max(maxGap, a - end); }
    if (b > end) { busy += b - Math.max(a, end); end = b; }
  }
  return { busy, gaps, maxGap, span: end - iv[0][0] };
}

for (const run of cudaRuns) {
  const doc = await cudaDoc(run.srv, run.name);
  const kStep = doc.steps.findIndex((s, i) => i > 0 && s.kernels?.length) >= 0 ? doc.steps.findIndex((s, i) => i > 0 && s.kernels?.length) : doc.steps.findIndex((s) => s.kernels?.length);
  const st = doc.steps[kStep];
  const graph = doc.graphs.find((g) => g.id === st?.graph);
  const url = `${run.srv.url}?trace=${encodeURIComponent(run.name)}&step=${kStep}`;

  await test(`${run.name}: GPU time colours the graph`, async () => {
    check(kStep >= 0, 'no step with kernel records');
    await page.goto(url);
    await ready();
    await details(kStep);
    const opts = await page.$$eval('#metric option', (os) => os.map((o) => o.value));
    check(opts.includes('gpu'), `no GPU time colour among ${opts}`);
    await page.selectOption('#metric', 'gpu');
    check(/GPU time \(µs\)/.test(await page.textContent('.graph-legend')), 'legend does not name GPU time and its unit');
    // The slowest node's label shows its gpu_us; a node without kernels shows none.
    const withGpu = st.nodes.filter((r) => r.gpu_us !== undefined);
    const sums = new Map();
    for (const k of st.kernels) if (k.node >= 0) sums.set(k.node, (sums.get(k.node) ?? 0) + k.duration_ns / 1000);
    const slow = withGpu.length ? withGpu.reduce((a, b) => (b.gpu_us > a.gpu_us ? b : a))
      : { id: [...sums.entries()].sort((a, b) => b[1] - a[1])[0][0], gpu_us: [...sums.values()].sort((a, b) => b - a)[0] };
    // The Timings tab's slowest GPU node is the same; clicking it brings the node into view (the
    // graph paints only the rows on screen).
    await page.click('.tab[data-tab="timings"]');
    await page.click('.timings-panel .gpu-nodes .bar');
    await page.waitForFunction((n) => document.querySelector('.inspector .node-title')?.textContent === n, graph.nodes[slow.id].name, { timeout: 5000 })
      .catch(() => { throw new Error(`the slowest GPU node in the chart is not ${graph.nodes[slow.id].name}`); });
    await page.waitForFunction((id) => window.minferViz.nodeText(id) !== '', slow.id, { timeout: 5000 }).catch(() => {});
    const text = await page.evaluate((id) => window.minferViz.nodeText(id), slow.id);
    check(text.includes(fmt3(slow.gpu_us)), `node ${graph.nodes[slow.id].name}: label "${text}", gpu_us ${slow.gpu_us}`);
    if (sums.has(slow.id)) check(Math.abs(sums.get(slow.id) - slow.gpu_us) <= 1e-3 * slow.gpu_us + 1e-3, `gpu_us ${slow.gpu_us} ≠ sum of its kernels ${sums.get(slow.id)}`);
    const none = graph.nodes.find((n) => n.fused_into >= 0);
    if (none) check(!/µs|ms/.test(await page.evaluate((id) => window.minferViz.nodeText(id), none.id)), 'a fused-away node shows a GPU time');
    await page.waitForSelector('.inspector .stats-table tr[data-stat="GPU time"], .inspector .panel-section h3:has-text("Kernels (")');
    await shot(`graph-gpu-time${run.tag}`);
  });

  await test(`${run.name}: kernel timeline of the step, by node`, async () => {
    await page.click('.tab[data-tab="kernels"]');
    await page.waitForSelector('.kernel-timeline rect.kernel');
    const n = await page.$$eval('.kernel-timeline rect.kernel', (r) => r.length);
    check(n === st.kernels.length, `${n} kernel bars for ${st.kernels.length} kernels`);
    const nodesWith = new Set(st.kernels.filter((k) => k.node >= 0).map((k) => k.node));
    check(nodesWith.size > 0, `step ${kStep}: none of its ${st.kernels.length} kernels is attributed to a node`);
    check(await page.$$eval('.kernel-timeline rect.node-span', (r) => r.length) === nodesWith.size, 'node spans ≠ nodes with kernels');
    const loose = st.kernels.filter((k) => k.node < 0).length;
    check(await page.$$eval('.kernel-timeline rect.kernel.unattributed', (r) => r.length) === loose, 'unattributed kernels not marked');
    if (loose) check((await page.$$eval('.kernel-timeline .lane-label', (l) => l.map((x) => x.textContent))).includes('no node'), 'no "no node" lane');
    const b = busyNs(st.kernels);
    check(await page.$$eval('.kernel-timeline rect.idle-gap', (r) => r.length) === b.gaps, `idle gaps ≠ ${b.gaps}`);
    // Each node span covers its kernels on screen.
    const bad = await page.evaluate(() => {
      const spans = new Map([...document.querySelectorAll('.kernel-timeline rect.node-span')].map((r) => [r.dataset.node, r.getBBox()]));
      let worst = 0;
      for (const k of document.querySelectorAll('.kernel-timeline rect.kernel[data-node]')) {
        const s = spans.get(k.dataset.node), kb = k.getBBox();
        worst = Math.max(worst, s.x - kb.x, kb.x + kb.width - (s.x + s.width));
      }
      return worst;
    });
    check(bad <= 1.01, `a kernel sticks out of its node span by ${bad} px`);
    // Hover: the tooltip names the kernel and its launch; click selects its node.
    const k = st.kernels.filter((x) => x.node >= 0).sort((a, c) => c.duration_ns - a.duration_ns)[0];
    const idx = st.kernels.indexOf(k);
    const rect = (await page.$$('.kernel-timeline rect.kernel'))[idx];
    await rect.hover();
    const tip = await page.textContent('.kt-tip');
    for (const want of [k.name, `[${k.grid.join(', ')}]`, `[${k.block.join(', ')}]`, `${k.registers} per thread`, 'B per block', fmt3(k.duration_ns / 1000), graph.nodes[k.node].name])
      check(tip.includes(want), `tooltip lacks "${want}": ${tip}`);
    await rect.click();
    await page.waitForFunction((name) => document.querySelector('.inspector .node-title')?.textContent === name, graph.nodes[k.node].name);
    check(await page.$$eval('.kernel-timeline rect.kernel.sel', (r) => r.length) === st.kernels.filter((x) => x.node === k.node).length, 'the node\'s kernels are not outlined');
    if (loose) {
      await (await page.$('.kernel-timeline rect.kernel.unattributed')).hover();
      const t2 = await page.textContent('.kt-tip');
      check(/none — /.test(t2), `unattributed tooltip: ${t2}`);
      const reason = st.kernels.find((x) => x.node < 0).unattributed;
      if (reason) check(t2.includes(reason), `tooltip lacks the reason "${reason}"`);
    }
    await tallShot(`kernels-timeline${run.tag}`, async () => {
      await (await page.$$('.kernel-timeline rect.kernel'))[idx].hover();
      check(await page.$eval('.kt-tip', (t) => getComputedStyle(t).display === 'block'), 'tooltip hidden');
    });
    // The prefill (eager launches; on the f16 path the first cuBLAS call) on the same page.
    await page.evaluate(() => window.minferViz.setStep(0));
    await details(0);
    await page.waitForSelector('.kernel-timeline rect.kernel');
    const n0 = await page.$$eval('.kernel-timeline rect.kernel', (r) => r.length);
    check(n0 === (doc.steps[0].kernels?.length ?? 0), `prefill: ${n0} kernel bars for ${doc.steps[0].kernels?.length} kernels`);
    await tallShot(`kernels-prefill${run.tag}`);
    await page.evaluate((s) => window.minferViz.setStep(s), kStep);
    await details(kStep);
  });

  await test(`${run.name}: timings show GPU span, busy, idle, host, events and dropped records`, async () => {
    await page.click('.tab[data-tab="timings"]');
    await page.waitForSelector('.timings-panel .gpu-head .chip');
    const chips = await page.$$eval('.timings-panel .gpu-head .chip', (cs) => Object.fromEntries(cs.map((c) => [c.dataset.k, c.textContent])));
    const b = busyNs(st.kernels);
    const want = [['GPU span', st.gpu_ms ?? b.span / 1e6], ['busy', st.gpu_busy_ms ?? b.busy / 1e6], ['step wall', st.time_ms]];
    if (st.host_ms !== undefined) want.push(['host enqueue', st.host_ms]);
    if (st.event_ms !== undefined) want.push(['GPU events', st.event_ms]);
    for (const [k, ms] of want) check(chips[k]?.includes(fmt3(ms * 1000)), `chip ${k}: "${chips[k]}", expected ${ms} ms`);
    check(Math.abs((st.gpu_ms ?? b.span / 1e6) - b.span / 1e6) < 1e-5 + 1e-4 * b.span / 1e6, `recorded gpu_ms ${st.gpu_ms} ≠ kernel span ${b.span / 1e6}`);
    check(new RegExp(`in ${b.gaps} gaps`).test(chips.idle), `idle chip: ${chips.idle}, ${b.gaps} gaps`);
    if (st.kernels_dropped !== undefined) check(chips['dropped records']?.includes(String(st.kernels_dropped)), `dropped chip: ${chips['dropped records']}`);
    check(await page.$$eval('.gpu-steps tr[data-step]', (r) => r.length) === doc.steps.length, 'step table rows ≠ steps');
    check(await page.$('.timings-panel .gpu-nodes .bar'), 'no per-node GPU time chart');
    // A step with dropped records is marked in the table and its chip.
    const dropStep = doc.steps.findIndex((s) => s.kernels_dropped > 0);
    if (dropStep >= 0) {
      await page.click(`.gpu-steps tr[data-step="${dropStep}"]`);
      await details(dropStep);
      check(await page.$('.timings-panel .gpu-head .chip.bad[data-k="dropped records"]'), 'lost CUPTI records not flagged');
    }
    await tallShot(`timings-gpu${run.tag}`);
    // A step without kernel records says why.
    const noK = doc.steps.findIndex((s) => !s.kernels?.length);
    if (noK >= 0) {
      await page.click(`.gpu-steps tr[data-step="${noK}"]`);
      await details(noK);
      const why = await page.textContent('.timings-panel .no-kernels');
      const want = doc.steps[noK].kernels_note ?? doc.meta.cupti?.reason;
      check(!want || why.includes(want), `no-kernel step: "${why}", expected "${want}"`);
    }
  });
}

await test('CUPTI off: the page says why there are no kernels', async () => {
  const doc = await cudaDoc(cudaServer, 'fixture-cuda-v3-nocupti.json');
  await page.goto(`${cudaServer.url}?trace=fixture-cuda-v3-nocupti.json&step=1`);
  await ready();
  await details(1);
  const opts = await page.$$eval('#metric option', (os) => os.map((o) => o.value));
  check(!opts.includes('gpu'), 'GPU time colour offered without kernel records');
  await page.click('.tab[data-tab="kernels"]');
  const text = await page.textContent('.kernels-panel');
  check(text.includes(doc.meta.cupti.reason), `timeline tab does not give the CUPTI reason: ${text}`);
  await page.click('.tab[data-tab="timings"]');
  check((await page.textContent('.timings-panel .no-kernels')).includes(doc.meta.cupti.reason), 'timings tab does not give the CUPTI reason');
  check((await page.textContent('.timings-panel .cupti-note')).includes('CUPTI off'), 'no CUPTI note under the step table');
  // A CPU trace offers host time, not GPU time.
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}`);
  await ready();
  const cpuOpts = await page.$$eval('#metric option', (os) => os.map((o) => o.value));
  check(cpuOpts.includes('time') && !cpuOpts.includes('gpu'), `cpu trace colours: ${cpuOpts}`);
});
cudaServer.stop();
rmSync(cudaDir, { recursive: true, force: true });

// ----- The roofline of a CUDA trace recorded with its device's measured read bandwidth
// (meta.device_limits, the H200 paired sample of session 16): the roof is the measured one.
const measuredSample = list.find((e) => e.name === 'qwen2.5-0.5b-q4_0-cuda-paired.json.gz');
if (measuredSample) await test('roofline: a CUDA trace with the measured read bandwidth draws that roof', async () => {
  await page.goto(`${server.url}?trace=${encodeURIComponent(measuredSample.name)}&step=1`);
  await ready();
  await details(1);
  await page.click('.tab[data-tab="roofline"]');
  await page.waitForSelector('.roofline-chart circle.point');
  const roofs = await page.textContent('.roofline-roofs');
  check(/bandwidth 4143 GB\/s \(measured on the device\)/.test(roofs), `the roofs line does not give the recorded 4143 GB/s as measured: ${roofs}`);
  check(await page.$$eval('.roofline-chart circle.point', (c) => c.length) > 50, 'too few roofline points');
  await shot('roofline-cuda-measured');
});

// ----- Roofline (issue 30, item 2) on the committed CUDA MMQ sample: no measured bandwidth in it,
// so the page must say the roof is the nominal one. Decode step 1 has kernel records.
const roofSample = list.find((e) => e.name === 'qwen2.5-0.5b-q4_0-cuda-mmq.json.gz');
if (roofSample || !mock) await test('roofline: graph colour, chart with both roofs, worst nodes, linked to the graph', async () => {
  check(roofSample, 'the committed CUDA sample qwen2.5-0.5b-q4_0-cuda-mmq.json.gz is not served');
  await page.goto(`${server.url}?trace=${encodeURIComponent(roofSample.name)}&step=1`);
  await ready();
  await details(1);
  const opts = await page.$$eval('#metric option', (os) => os.map((o) => o.value));
  check(opts.includes('roof'), `no roofline colour among ${opts}`);
  await page.selectOption('#metric', 'roof');
  const legend = await page.textContent('.graph-legend');
  check(/fraction of roofline \(% of the roof\)/.test(legend) && /nominal/.test(legend) && /H200/.test(legend), `legend: ${legend}`);
  const qkv = await page.evaluate(() => window.minferViz.findNode('blk.0.attn_v'));
  check(/% of roof/.test(await page.evaluate((id) => window.minferViz.nodeText(id), qkv)), 'the fused QKV node shows no fraction');
  await shot('graph-roofline');
  await page.click('.tab[data-tab="roofline"]');
  await page.waitForSelector('.roofline-chart circle.point');
  const points = await page.$$eval('.roofline-chart circle.point', (c) => c.length);
  check(points > 50, `only ${points} points`);
  check(await page.$$eval('.roofline-chart line.roof-bandwidth', (l) => l.length) === 1, 'no bandwidth roof');
  check(await page.$$eval('.roofline-chart line.roof-ceiling', (l) => l.length) === 3, 'not three compute ceilings (int8, f16, f32)');
  const titles = await page.$$eval('.roofline-chart .axis-title', (t) => t.map((x) => x.textContent).join(' | '));
  check(/ops per byte/.test(titles) && /ops\/s/.test(titles), `axis titles: ${titles}`);
  check(/nominal datasheet figure: not recorded in this trace/.test(await page.textContent('.roofline-roofs')), 'the roofs line does not say the bandwidth is nominal');
  // The worst row opens its node, and its point is ringed.
  const row = await page.$('.roofline-table tbody tr');
  const rowNode = Number(await row.getAttribute('data-node'));
  await row.click();
  await page.waitForFunction((id) => document.body.dataset.node === String(id), rowNode, { timeout: 5000 });
  check(await page.$$eval(`.roofline-chart circle.point.selected[data-node="${rowNode}"]`, (c) => c.length) === 1, 'the picked node\'s point is not ringed');
  // A click on another point selects its node in the graph and the inspector.
  const other = await page.$$eval('.roofline-chart circle.point', (cs, skip) => cs.map((c) => Number(c.dataset.node)).find((n) => n !== skip), rowNode);
  await page.dispatchEvent(`.roofline-chart circle.point[data-node="${other}"]`, 'click');
  await page.waitForFunction((id) => document.body.dataset.node === String(id), other, { timeout: 5000 });
  // Selecting a node in the graph (a node of a fused group) rings its group's point.
  await page.evaluate((id) => window.minferViz.selectNode(id), qkv);
  check(await page.$$eval('.roofline-chart circle.point.selected', (c) => c.length) === 1, 'selecting a node does not ring its point');
  await tallShot('roofline');
  // A step without kernel records says why.
  await page.evaluate(() => window.minferViz.setStep(5));
  await details(5);
  await page.waitForSelector('.roofline-none');
  check(/No kernel records in step 5/.test(await page.textContent('.roofline-none')), 'no reason on a step without kernels');
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

// qwen3 adds per-head Q/K norm nodes and an attention wider than n_embd; llama has rope_normal
// and rope_freqs. Each family's sample opens: family in the header and the list, both views drawn.
for (const fam of familySamples) {
  await test(`${fam.architecture} sample: family shown, operators and pipeline drawn`, async () => {
    await page.goto(server.url);
    await ready();
    const row = await page.$$eval('.traces-table tr', (trs, name) => {
      const tr = trs.find((t) => t.querySelector('a.trace-link')?.textContent === name);
      return tr ? tr.querySelector('td.family')?.textContent ?? '' : null;
    }, fam.name);
    check(row === fam.architecture, `the list shows family "${row}" for ${fam.name}`);
    await page.goto(`${server.url}?trace=${encodeURIComponent(fam.name)}&step=1`);
    await ready();
    check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
    const meta = await page.textContent('.app-header .meta');
    check(meta.includes(`${fam.architecture}, `), `the header does not name the family: ${meta}`);
    const doc = await api(`api/traces/${encodeURIComponent(fam.name)}`);
    const hp = doc.meta.model.hparams;
    if (hp.n_head * hp.head_dim !== hp.n_embd)
      check(meta.includes(`attention ${hp.n_head} × ${hp.head_dim} = ${hp.n_head * hp.head_dim} wide`), `the header hides the attention width: ${meta}`);
    await page.waitForSelector('.graph-svg .node');
    const drawn = await page.evaluate(() => ['blk.0.q_rope', 'blk.0.attn_q_norm', 'blk.0.attn'].map((n) => window.minferViz.findNode(n)));
    check(drawn[0] >= 0 && drawn[2] >= 0, `rope/attention nodes missing: ${drawn}`);
    if (fam.architecture === 'qwen3') {
      check(drawn[1] >= 0, 'no attn_q_norm node in a qwen3 graph');
      await page.click(`.graph-svg .node[data-id="${drawn[1]}"]`);
      await page.waitForSelector('.inspector .stats-table');
      check(/attn_q_norm/.test(await page.textContent('.inspector .node-title')), 'the q_norm node does not open');
    }
    await page.click('#view-pipeline');
    await page.waitForSelector('.pipeline-view .pl-box');
    const kinds = await page.$$eval('.pipeline-view .pl-box', (bs) => bs.map((b) => b.dataset.kind));
    check(kinds.filter((k) => k === 'attention').length === hp.n_layer, `${kinds.filter((k) => k === 'attention').length} attention stages for ${hp.n_layer} layers`);
    check(kinds.filter((k) => k === 'attn_norm').length === hp.n_layer, 'the Q/K norms were taken for extra RMSNorm stages');
    await page.click('.pl-box[data-stage="L0.attention"]');
    await page.waitForSelector('.inspector .stage-title');
    const ops = await page.textContent('.inspector .stage-details');
    check(/rope/.test(ops), `attention stage lists no rope: ${ops}`);
    if (fam.architecture === 'qwen3') check(/attn_q_norm|head_rms_norm/.test(ops), `the attention stage hides the Q/K norm: ${ops}`);
    await shot(`family-${fam.architecture}`);
  });
}

await test('comparison view shows the first divergent node', async () => {
  check(pair, 'no mmq/float pair of the same model among the traces');
  const floatB = list.find((e) => e.name === pair[1]).matmul_path;
  // The page measures against the float run (B) by default: the server's first trace is the reference.
  const cmp = await api(`api/compare?a=${encodeURIComponent(pair[1])}&b=${encodeURIComponent(pair[0])}`);
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
  check(/from sampled grid/.test(await page.textContent('.divergence-banner')), 'grid metrics are not labelled "from sampled grid"');
  check(new RegExp(`reference: B \\(${floatB}\\)`).test(await page.$eval('.reference-select', (s) => s.selectedOptions[0].textContent)), `${floatB} is not the default reference`);
  // Steps whose inputs differ say so, and the named node is never from one of them.
  const differ = cmp.steps.filter((s) => s.inputs_agree === false).map((s) => s.index);
  const marked = await page.$$eval('.agreement-table tr.inputs-differ', (rs) => rs.map((r) => Number(r.dataset.step)));
  check(JSON.stringify(marked) === JSON.stringify(differ), `rows marked "inputs differ" ${marked} != server's ${differ}`);
  if (differ.length) {
    check(new RegExp(`inputs differ from step ${differ[0]}`).test(await page.textContent('.divergence-banner')), 'the banner does not say where the inputs differ');
    if (cmp.first_divergent) check(cmp.first_divergent.step < differ[0], 'first divergent node named from a step whose inputs differ');
  }
  await shot('compare');
  // Switching the reference asks the server for the other order and keeps the page.
  await page.selectOption('.reference-select', 'a');
  await page.waitForFunction(() => /reference: A/.test(document.querySelector('.reference-select')?.selectedOptions[0].textContent ?? ''));
  check(await page.$eval('body', (b) => b.dataset.state) === 'ready', 'switching the reference broke the page');
  // Tokens and Timeline show both runs.
  for (const tab of ['tokens', 'kernels']) {
    await page.click(`.tab[data-tab="${tab}"]`);
    const runs = await page.$$eval('#tab-body .ab-block', (bs) => bs.map((b) => b.dataset.run).join(''));
    check(runs === 'AB', `the ${tab} tab shows ${runs || 'no'} run blocks, expected A and B`);
  }
});

// Issue #10: the paired comparison. The recorded 0.5b paired sample when the server lists it (else
// another recorded paired trace, else the generated paired fixture opened as a local file).
// The CUDA paired sample (issue 30 item 1: local errors computed on the GPU) takes the same checks.
const firstPaired = list.find((e) => e.compare_path && /0\.5b/.test(e.name) && !/cuda/.test(e.name)) ?? list.find((e) => e.compare_path);
const cudaPaired = list.find((e) => e.compare_path && /cuda-paired/.test(e.name));
for (const pairedEntry of [firstPaired, ...(cudaPaired && cudaPaired !== firstPaired ? [cudaPaired] : [])]) {
await test(`paired trace${pairedEntry ? ` ${pairedEntry.name}` : ''}: the page names the node that first adds error and how much`, async () => {
  let doc;
  if (pairedEntry) {
    doc = await api(`api/traces/${encodeURIComponent(pairedEntry.name)}`);
    await page.goto(`${server.url}?trace=${encodeURIComponent(pairedEntry.name)}`);
  } else {
    console.log('       (no recorded paired sample on the server: the generated fixture-paired.json)');
    doc = JSON.parse(readFileSync(join(fixtures, 'fixture-paired.json'), 'utf8'));
    await page.goto(server.url);
    await ready();
    await page.setInputFiles('input[type=file]', join(fixtures, 'fixture-paired.json'));
  }
  await ready();
  check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
  // A plain walk of the file in execution order: the first node under 30 dB over the full tensor,
  // the first whose own (local) error is under 30 dB, the first whose own error is not exact
  // (local < 200 dB: where error enters the run) and the one with the lowest local SQNR.
  const nameOf = (s, id) => doc.graphs.find((g) => g.id === s.graph).nodes[id].name;
  let full = null, local30 = null, own = null, worst = null;
  for (const s of doc.steps) for (const r of s.nodes) {
    if (!r.cmp) continue;
    const at = { step: s.index, id: r.id, name: nameOf(s, r.id), full: r.cmp.sqnr_db, local: r.cmp.local?.sqnr_db ?? null };
    if (!full && at.full !== null && at.full < 30) full = at;
    if (at.local === null || at.local >= 200) continue;
    if (!local30 && at.local < 30) local30 = at;
    own ??= at;
    if (!worst || at.local < worst.local) worst = at;
  }
  const dB = (x) => `${x.toFixed(1)} dB`;
  const banner = await page.textContent('.divergence-banner');
  const named = local30 ?? full;   // the node the banner names and the page opens on
  if (local30) {
    check(await page.textContent('.divergence-banner .divergent-name') === local30.name, `banner: ${banner}; expected ${local30.name}`);
    check(banner.includes(`adds ${dB(local30.local)}`), `banner does not say how much ${local30.name} adds (${dB(local30.local)}): ${banner}`);
  } else if (full) {
    // No node adds 30 dB of error itself: the first node under 30 dB inherits most of its error.
    check(await page.textContent('.divergence-banner .divergent-name') === full.name, `banner: ${banner}; expected ${full.name}`);
    check(banner.includes(`SQNR ${dB(full.full)}`), `banner does not give ${full.name}'s full-tensor SQNR ${dB(full.full)}: ${banner}`);
    if (full.local !== null && full.local < 200) check(banner.includes(`adds ${dB(full.local)} itself (local), the rest is inherited`), `banner does not give ${full.name}'s own error ${dB(full.local)}: ${banner}`);
  } else {
    check(/No node diverges|Identical/.test(banner), `no node adds error but the banner says: ${banner}`);
  }
  if (!local30 && own) {
    // Where error enters the run and which node adds the most, with their local SQNR.
    check(await page.textContent('.divergence-banner .first-own-name') === own.name, `banner names ${await page.textContent('.divergence-banner .first-own-name')} as the first node that adds error; the file says ${own.name} (${dB(own.local)}): ${banner}`);
    check((await page.textContent('.divergence-banner .first-own-db')).includes(`step ${own.step}, local ${dB(own.local)}`), `first own error: ${banner}`);
    check(await page.textContent('.divergence-banner .worst-local-name') === worst.name, `banner names ${await page.textContent('.divergence-banner .worst-local-name')} as adding the most error; the file says ${worst.name}`);
    check((await page.textContent('.divergence-banner .worst-local-db')).includes(`local ${dB(worst.local)}`), `worst local error: ${banner}`);
  }
  check(!/inputs differ/.test(banner), `a paired trace's banner says inputs differ: ${banner}`);
  // The page reads the paired metrics itself (/api/compare compares two files); the recorder's
  // one-file diff (`minfer-trace diff T --json`) names the same nodes.
  const traceBin = join(dirname(resolve(ROOT, process.env.MINFER_VIZ ?? 'build/bin/minfer-viz')), 'minfer-trace');
  if (pairedEntry && existsSync(traceBin)) {
    const d = JSON.parse(execFileSync(traceBin, ['diff', join(tracesDir, pairedEntry.name), '--json'], { maxBuffer: 1 << 30 }).toString());
    check(d.metrics_source === 'full', `minfer-trace diff of a paired trace: metrics_source ${d.metrics_source}`);
    check((d.first_divergent?.name ?? null) === (full?.name ?? null), `minfer-trace diff names ${d.first_divergent?.name} first under 30 dB, the page ${full?.name}`);
    check((d.worst_local?.name ?? null) === (worst?.name ?? null), `minfer-trace diff names ${d.worst_local?.name} as the worst local error, the page ${worst?.name}`);
    check(banner.includes(`token agreement ${(d.token_agreement * 100).toFixed(1)} %`), `token agreement: minfer-trace diff ${d.token_agreement}, banner ${banner}`);
  }
  if (named) {
    await page.waitForFunction((n) => document.querySelector('.inspector .node-title')?.textContent === n, named.name);
    const insp = await page.textContent('.inspector');
    check(/local SQNR/.test(insp) && /full tensor/.test(insp), 'inspector shows no full-tensor / local metrics');
    check(/Outlier channels/.test(insp), 'inspector shows no outlier channels');
    const outRows = await page.$$eval('.outliers-table tr', (rs) => rs.length - 1);
    const rec = doc.steps[named.step].nodes.find((r) => r.id === named.id);
    check(outRows === rec.outliers.length, `${outRows} outlier rows, the record has ${rec.outliers.length}`);
    if (rec.act_scales) check(/MMQ activation block scales/.test(insp), 'no activation block-scale summary for an MMQ matmul');
    // A and B on one colour scale, plus the relative-error map.
    const notes = await page.$$eval('.inspector .heatmap .legend-note', (ns) => ns.map((n) => n.textContent));
    check(await page.$$eval('.inspector .heatmap', (h) => h.length) === 3, 'expected A, B and relative-error heatmaps');
    check(notes[0] === notes[2], `A and B heatmaps do not share a scale: "${notes[0]}" vs "${notes[2]}"`);
  }
  check(/full tensor/.test(await page.textContent('.compare-panel')), 'metrics are not labelled as full-tensor');
  // The chart: one dot per compared node of the step, local squares.
  const step = Number(await page.evaluate(() => document.body.dataset.step));
  await details(step);
  const compared = doc.steps[step].nodes.filter((r) => r.cmp).length;
  // Lockstep: both runs read the same tokens on every step, so no step is marked "inputs differ".
  check(await page.$$eval('.agreement-table tr[data-step]', (r) => r.length) === doc.steps.length, 'agreement rows != steps');
  check(await page.$$eval('.agreement-table tr.inputs-differ', (r) => r.length) === 0, 'a paired trace has steps marked "inputs differ"');
  check(await page.$$eval('.agreement-table td.inputs', (tds) => tds.every((t) => t.textContent === 'same')), 'a step\'s inputs are not "same"');
  check(await page.$$eval('.error-chart .full-dot', (d) => d.length) === compared, 'error chart dots != compared nodes');
  check(await page.$$eval('.error-chart .local-mark', (d) => d.length) > 0, 'no local-error marks in the chart');
  // Worst nodes: sorted worst first, filter by op.
  const firstLocal = await page.$eval('.worst-table tr[data-step] td:nth-child(4)', (td) => td.textContent);
  const minLocal = Math.min(...doc.steps.flatMap((s) => s.nodes.filter((r) => r.cmp?.local).map((r) => r.cmp.local.sqnr_db)));
  check(firstLocal === `${minLocal.toFixed(1)} dB`, `worst-nodes table starts at ${firstLocal}, the file's worst local SQNR is ${minLocal.toFixed(1)} dB`);
  await page.selectOption('.wn-op', 'matmul');
  const ops = await page.$$eval('.worst-table tr[data-step] td:nth-last-child(2)', (tds) => [...new Set(tds.map((t) => t.textContent))]);
  check(ops.length === 1 && ops[0] === 'matmul', `op filter left ${ops}`);
  await page.click('.worst-table th[data-key="sqnrDb"]');
  check(/SQNR ▲/.test(await page.textContent('.worst-table th[data-key="sqnrDb"]')), 'SQNR column did not sort');
  // Next-token distributions as sampled, with the sampler settings.
  check(await page.$$eval('.topk-side', (s) => s.length) === 2, 'A and B top-k are not side by side');
  const tk = await page.textContent('.topk-pair');
  check(/p as sampled/.test(tk) && /repeat penalty/.test(tk) && /margin top1−top2/.test(tk), `top-k lacks sampled p / sampler / margin: ${tk.slice(0, 200)}`);
  // Colour by local error: the legend separates 20, 30 and 40 dB.
  await page.selectOption('#metric', 'local');
  const legend = await page.textContent('.graph-legend');
  check(/20 dB/.test(legend) && /30 dB/.test(legend) && /40 dB/.test(legend), `legend: ${legend}`);
  await shot(pairedEntry && /cuda/.test(pairedEntry.name) ? 'compare-paired-cuda' : 'compare-paired');
  await page.selectOption('#metric', 'error');
});
}

await test('a trace compared with itself says identical and names no node', async () => {
  const name = pair ? pair[0] : single.name;
  await page.goto(`${server.url}?a=${encodeURIComponent(name)}&b=${encodeURIComponent(name)}`);
  await ready();
  check(await page.$eval('body', (b) => b.dataset.state) === 'ready', await page.textContent('body'));
  const banner = await page.textContent('.divergence-banner');
  check(/Identical/.test(banner) && !/closest call|First divergent/.test(banner), `self-comparison banner: ${banner}`);
});

await test('the landing page Compare picks a comparable pair, or says why a pair is refused', async () => {
  await page.goto(server.url);
  await ready();
  if (!(await page.$('.compare-go'))) { check(list.length < 2, 'no compare picker with two traces listed'); return; }
  const [a, b] = [await page.$eval('#cmp-a', (s) => s.value), await page.$eval('#cmp-b', (s) => s.value)];
  const ea = list.find((e) => e.name === a), eb = list.find((e) => e.name === b);
  const comparable = list.some((x) => list.some((y) => x !== y && x.model_sha256 === y.model_sha256 && x.prompt === y.prompt));
  if (comparable) {
    check(ea.model_sha256 === eb.model_sha256 && ea.prompt === eb.prompt && a !== b, `default pair ${a} / ${b} is not of one model and prompt`);
    // A pair of different models is refused before the server is asked.
    const other = list.find((e) => e.model_sha256 !== ea.model_sha256);
    if (other) {
      await page.selectOption('#cmp-b', other.name);
      check(await page.$eval('.compare-go', (x) => x.disabled), 'Compare is enabled for two different models');
      check(/different models/.test(await page.textContent('.compare-why')), 'no reason given for the refused pair');
      await page.selectOption('#cmp-b', b);
    }
    await page.click('.compare-go');
    await ready();
    check(await page.$eval('body', (x) => x.dataset.state) === 'ready', `default Compare failed: ${await page.textContent('body')}`);
  } else {
    check(/No two traces share/.test(await page.textContent('.compare-why')), 'no explanation why no pair exists');
  }
});

// On the recorded samples (the mock's fixtures have no CUDA pair).
if (cudaPair || !mock) await test('the CUDA pair (mmq vs f16) opens from the landing page\'s Compare', async () => {
  check(cudaPair, 'no CUDA mmq/f16 pair of one model and prompt among the traces');
  const failed = badResponses.length;
  await page.goto(server.url);
  await ready();
  await page.selectOption('#cmp-a', cudaPair[0]);
  await page.selectOption('#cmp-b', cudaPair[1]);
  check(!(await page.$eval('.compare-go', (x) => x.disabled)), `Compare refused the CUDA pair: ${await page.textContent('.compare-why')}`);
  await page.click('.compare-go');
  await page.waitForURL((u) => u.searchParams.get('a') === cudaPair[0] && u.searchParams.get('b') === cudaPair[1]);
  await ready();
  check(await page.$eval('body', (x) => x.dataset.state) === 'ready', `the CUDA comparison failed: ${await page.textContent('body')}`);
  check(badResponses.length === failed, `requests failed: ${badResponses.slice(failed).join(', ')}`);
  // The banner names the node the server names (f16, the float path, as the reference).
  const cmp = await api(`api/compare?a=${encodeURIComponent(cudaPair[1])}&b=${encodeURIComponent(cudaPair[0])}`);
  check(!cmp.error, `server comparison failed: ${cmp.error}`);
  if (cmp.first_divergent) check(await page.textContent('.divergence-banner .divergent-name') === cmp.first_divergent.name, `banner: ${await page.textContent('.divergence-banner')}; server: ${cmp.first_divergent.name}`);
  check(await page.$$eval('.agreement-table tr[data-step]', (r) => r.length) === cmp.steps.length, 'agreement rows != compared steps');
  // Both runs' kernels in the Timeline tab.
  await page.click('.tab[data-tab="kernels"]');
  check(await page.$$eval('#tab-body .ab-block', (bs) => bs.map((b) => b.dataset.run).join('')) === 'AB', 'the Timeline tab does not show A and B');
});

// Issue 31, item 7: a --trace-topk 100000 trace took 39-51 s to open and 31-33 s per step
// change, every one of its 100,000 bars drawn. The tokens panel draws the first 50 and the
// chosen token, and says how many it left out.
await test('a trace with top-k 100000 opens and changes steps in seconds, drawing at most 51 bars', async () => {
  await page.goto(server.url);
  await ready();
  const t0 = Date.now();
  await page.setInputFiles('input[type=file]', join(fixtures, 'fixture-topk100000.json'));
  await page.waitForSelector('.tab[data-tab="tokens"]');
  await page.click('.tab[data-tab="tokens"]');
  await page.waitForFunction(() => /top 100000 next tokens/.test(document.querySelector('.topk-head strong')?.textContent ?? ''), null, { timeout: 60000 });
  const openMs = Date.now() - t0;
  const t1 = Date.now();
  await page.evaluate(() => window.minferViz.setStep(2));
  await page.waitForFunction(() => /^Step 2 /.test(document.querySelector('.topk-head strong')?.textContent ?? ''), null, { timeout: 60000 });
  const stepMs = Date.now() - t1;
  const bars = await page.$$eval('.topk-chart .bar', (b) => b.length);
  check(bars >= 2 && bars <= 51, `${bars} bars drawn for a top-k of 100000`);
  const rest = await page.textContent('.topk p.muted');
  check(/more tokens of the top 100,000 not drawn/.test(rest ?? ''), `no line for the tokens not drawn: ${rest}`);
  check(openMs < 15000, `opening took ${openMs} ms`);
  check(stepMs < 3000, `a step change took ${stepMs} ms`);
  console.log(`       top-k 100000: opened in ${openMs} ms, step change ${stepMs} ms, ${bars} bars`);
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

// ----- a version-1 trace in the real upstream layout, served by a minfer-viz without --model ---
// (web/test/fixtures/make-upstream-v1.ts: 24 layers, repeated node names, fused decode nodes).
const upstreamDir = mkdtempSync(join(tmpdir(), 'minfer-upstream-'));
copyFileSync(join(fixtures, 'upstream-v1.json'), join(upstreamDir, 'upstream-v1.json'));
const upstreamServer = await startServer({ mock, tracesDir: upstreamDir });
const UPSTREAM_LAYERS = 24;
await test('a real-layout upstream v1 trace: one graph row per layer, pipeline columns filled, no failed request', async () => {
  const failed = [], errors = [];
  const onResponse = (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); };
  const onConsole = (m) => { if (m.type() === 'error') errors.push(m.text()); };
  page.on('response', onResponse);
  page.on('console', onConsole);
  try {
    await page.goto(upstreamServer.url);
    await ready();
    await page.click('a.trace-link:has-text("upstream-v1.json")');
    await ready();
    await page.waitForSelector('.graph-svg .node');
    const layerKeys = Array.from({ length: UPSTREAM_LAYERS }, (_, l) => `L${l}`);
    const rowsOf = () => page.$$eval('.graph-svg .row', (rs) => rs.map((r) => ({
      key: r.dataset.row, nodes: r.querySelectorAll('.row-full .node').length, top: Number(/translate\(0,([\d.]+)/.exec(r.getAttribute('transform'))[1]),
      columns: new Set([...r.querySelectorAll('.row-full .node')].map((n) => /translate\(([\d.]+)/.exec(n.getAttribute('transform'))[1])).size })));
    for (const [step, perRow] of [[0, 18], [1, 13]]) {   // the prefill, then a decode step (fused_qkv, fused_ffn)
      await page.evaluate((s) => window.minferViz.setStep(s), step);
      await details(step);
      const rows = await rowsOf();
      check(JSON.stringify(rows.map((r) => r.key)) === JSON.stringify(['head', ...layerKeys, 'tail']), `step ${step}: rows ${rows.map((r) => r.key).join(' ')}`);
      const layers = rows.filter((r) => /^L\d+$/.test(r.key));
      check(layers.every((r) => r.nodes === perRow), `step ${step}: nodes per layer row ${layers.map((r) => r.nodes).join(' ')} (want ${perRow})`);
      check(layers.every((r) => r.columns >= 6), `step ${step}: a layer row piles into few columns: ${layers.map((r) => r.columns).join(' ')}`);
      check(rows.every((r, i) => i === 0 || r.top > rows[i - 1].top), `step ${step}: rows are not stacked top to bottom`);
      if (step === 0) await shot('v1-upstream-rows');
    }
    check(/no vocabulary for this model \(start minfer-viz with --model qwen2\.5-0\.5b-instruct-q8_0\.gguf/.test(await page.textContent('.warnings')),
      'the page does not say that the server has no vocabulary for the model');
    await page.click('#view-pipeline');
    await page.waitForSelector('.pipeline-view .pl-box');
    for (const kind of ['attn_norm', 'attention', 'attn_residual', 'ffn_norm', 'ffn', 'ffn_residual']) {
      const vals = await page.$$eval(`.pipeline-view .pl-box[data-kind="${kind}"] .pl-val`, (vs) => vs.map((v) => v.textContent));
      check(vals.length === UPSTREAM_LAYERS && vals.every((v) => /\d/.test(v)), `${kind}: ${vals.length} boxes, values ${vals.join(' | ')}`);
      check(new Set(vals).size >= UPSTREAM_LAYERS - 2, `${kind}: the layers show the same values: ${vals.join(' | ')}`);
    }
    await shot('v1-upstream-pipeline');
    await page.click('#view-ops');
  } finally {
    page.off('response', onResponse);
    page.off('console', onConsole);
  }
  check(failed.length === 0, `failed requests: ${failed.join(', ')}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
});
upstreamServer.stop();
rmSync(upstreamDir, { recursive: true, force: true });

await test('the active Operators / Pipeline button keeps a readable label, also under the pointer', async () => {
  await page.goto(`${server.url}?trace=${encodeURIComponent(single.name)}`);
  await ready();
  for (const [id, label] of [['view-pipeline', 'Pipeline'], ['view-ops', 'Operators']]) {
    await page.click(`#${id}`);   // the pointer stays on the button it pressed
    await page.waitForSelector(`#${id}.on`);
    const c = await textContrast(`#${id}`);
    check(c.text === label && c.ratio >= 4.5, `${id} pressed: "${c.text}" in ${c.color} on ${c.background}, contrast ${c.ratio.toFixed(2)} (want ≥ 4.5)`);
    await page.mouse.move(5, 5);
    const idle = await textContrast(`#${id}`);
    check(idle.ratio >= 4.5, `${id} pressed, pointer away: contrast ${idle.ratio.toFixed(2)}`);
  }
  await shot('view-toggle');
});

await test('a deep link to a missing trace shows the server error', async () => {
  await page.goto(`${server.url}?trace=no-such-trace.json`);
  await ready();
  check(/no trace named|not found|404/i.test(await page.textContent('.error-box')), 'no readable error');
});

// Issue 31, item 2: a trace the server lists as unreadable (here the top-level 'steps' twice),
// opened by a hand-written ?trace= link: the page showed it anyway, loading the file whole when
// the server refused its slices (JSON.parse keeps the last key). The mock server has no slices.
if (!mock) await test('a hand-written link to a trace the server cannot read shows its error, not the trace', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'minfer-twice-'));
  const text = await (await fetch(`${server.url}api/traces/${encodeURIComponent(single.name)}`)).text();
  writeFileSync(join(dir, 'steps-twice.json'), text.replace(/^\s*\{/, '{"steps":[],'));
  const twice = await startServer({ mock, tracesDir: dir });
  try {
    const listed = (await (await fetch(`${twice.url}api/traces`)).json()).find((e) => e.name === 'steps-twice.json');
    check(/appears twice/.test(listed?.error ?? ''), `the server lists it as ${JSON.stringify(listed)}`);
    await page.goto(`${twice.url}?trace=steps-twice.json`);
    await ready();
    const state = await page.evaluate(() => document.body.dataset.state);
    const box = (await page.$('.error-box')) ? await page.textContent('.error-box') : '';
    check(state === 'error' && /the key 'steps' appears twice/.test(box), `page state ${state}, error box: "${box}"`);
  } finally {
    twice.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// ----- live runs: a second server with --model and a tiny model made by minfer-gen ---------
const genBin = join(dirname(resolve(ROOT, process.env.MINFER_VIZ ?? 'build/bin/minfer-viz')), 'minfer-gen');
const samplePrompt = '<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n';
const liveSample = 'tiny-q8_0-f32.json';   // recorded with the model and prompt the live run uses
if (mock || !existsSync(genBin) || !existsSync(join(tracesDir, liveSample))) {
  console.log(`  SKIP live runs: ${mock ? 'mock server' : !existsSync(genBin) ? `no minfer-gen at ${genBin}` : `no ${liveSample} sample trace to compare with`}`);
} else {
  const liveDir = mkdtempSync(join(tmpdir(), 'minfer-live-'));
  const model = join(liveDir, 'tiny-q8_0.gguf');
  execFileSync(genBin, ['--preset', 'tiny', '--weights', 'q8_0', '--seed', '1', '-o', model], { stdio: 'ignore' });
  mkdirSync(join(liveDir, 'traces'));
  copyFileSync(join(tracesDir, liveSample), join(liveDir, 'traces', liveSample));
  const ls = await startServer({ mock: false, tracesDir: join(liveDir, 'traces'), extraArgs: ['--model', model] });
  // JSON bodies go as application/json (the server answers 415 otherwise), as the page sends them.
  const jsonPost = (url, body) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const post = async (path, body) => { const r = await jsonPost(ls.url + path, JSON.stringify(body)); return { status: r.status, body: await r.json() }; };

  await test('live run: prompt in the page, graph lights up, tokens arrive, trace saved, compared', async () => {
    await page.goto(ls.url);
    await ready();
    await page.waitForSelector('#run-panel');
    // auto by default: the engine takes the GPU where one is usable (here, without one, the CPU)
    check(await page.$eval('#run-backend', (s) => s.value) === 'auto', 'the Run panel does not default to the auto backend');
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
    check(/\bcpu\b/.test(await page.textContent('.app-header .meta')), `the header does not name the backend auto picked: ${await page.textContent('.app-header .meta')}`);
    const lit = await page.evaluate(() => { const v = window.minferViz; let n = 0; for (let i = 0; i < 60; i++) if (v.nodeText(i)) n++; return n; });
    check(lit >= 20, `only ${lit} graph nodes show a value after the run`);
    check((await page.$$('.token-strip .tok.gen')).length === 24, 'the tokens did not all arrive');
    const list = await (await fetch(ls.url + 'api/traces')).json();
    const entry = list.find((e) => e.name === saved);
    check(entry && !entry.error && entry.steps === 24 && entry.complete, `saved trace not listed as a complete 24-step trace: ${JSON.stringify(entry)}`);
    // The same prompt, model and sampler as the f32 sample: compare the live run with it.
    await page.selectOption('.live-compare-with', liveSample);
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
    const bad = await jsonPost(ls.url + 'api/run', '{not json');
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
    const p = await jsonPost(server.url + 'api/run', '{"prompt":"hi"}');
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
  // Only the screenshots docs/screenshots/README.md describes (the others stay in web/e2e/out).
  const readme = readFileSync(join(ROOT, 'docs/screenshots/README.md'), 'utf8');
  const documented = shots.filter((p) => readme.includes(`\`${p.split('/').pop()}\``));
  for (const p of documented) copyFileSync(p, join(ROOT, 'docs/screenshots', p.split('/').pop()));
  console.log(`copied ${documented.length} screenshots to docs/screenshots/: ${documented.map((p) => p.split('/').pop()).join(' ')}`);
}
const failed = results.filter((r) => !r.ok).length;
console.log(`screenshots in ${OUT}`);
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
