// Shared by the e2e suite and the page-speed benchmark: start the server (the real minfer-viz
// binary, or the mock when asked), launch Debian's headless Chromium through playwright-core.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = resolve(new URL('../..', import.meta.url).pathname);
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function freePort() {
  return new Promise((ok, bad) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => ok(port)); });
    s.on('error', bad);
  });
}

// Why the suite cannot run here, or null when it can.
export function skipReason({ mock }) {
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium)`;
  if (!existsSync(join(ROOT, 'web/dist/index.html'))) return 'web/dist is not built (npm run build:web)';
  if (mock) return null;
  const bin = resolve(ROOT, process.env.MINFER_VIZ ?? 'build/bin/minfer-viz');
  if (!existsSync(bin)) return `no minfer-viz binary at ${bin} (build it, or set MINFER_VIZ)`;
  const dir = resolve(ROOT, process.env.MINFER_TRACES ?? 'traces');
  const traces = existsSync(dir) ? readdirSync(dir).filter((f) => /\.json(\.gz)?$/.test(f)) : [];
  if (traces.length === 0) return `no recorded traces (*.json, *.json.gz) in ${dir} (set MINFER_TRACES)`;
  return null;
}

export async function startServer({ mock, tracesDir, extraArgs = [] }) {
  const port = await freePort();
  if (mock) {
    const { startMockServer } = await import('./mock-server.mjs');
    const s = await startMockServer({ tracesDir, webDir: join(ROOT, 'web/dist'), port });
    return { url: `http://127.0.0.1:${port}/`, stop: s.close, kind: 'MOCK server (fixtures)' };
  }
  const bin = resolve(ROOT, process.env.MINFER_VIZ ?? 'build/bin/minfer-viz');
  const proc = spawn(bin, ['--port', String(port), '--traces', tracesDir, '--web', join(ROOT, 'web/dist'), ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 15000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`minfer-viz exited with ${proc.exitCode}: ${log}`);
    try { if ((await fetch(url + 'api/health')).ok) break; } catch { /* not up yet */ }
    if (Date.now() > deadline) { proc.kill(); throw new Error(`minfer-viz did not answer /api/health within 15 s: ${log}`); }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop: () => proc.kill('SIGTERM'), kind: `minfer-viz ${bin}` };
}

export async function launchBrowser() {
  const userDataDir = mkdtempSync(join(tmpdir(), 'minfer-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, viewport: { width: 1600, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--enable-precise-memory-info'],
  });
  return { context, userDataDir };
}

// Closes the browser and removes its throwaway profile.
export async function closeBrowser({ context, userDataDir }) {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
}
