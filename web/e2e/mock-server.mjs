// Development stand-in for minfer-viz: the same JSON API over a directory of fixture traces
// (comparisons read from DIR/compare/A__B.json), and web/dist at /. Not used by the real e2e
// run unless --mock is asked for explicitly.
import { createServer } from 'node:http';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml' };

export function startMockServer({ tracesDir, webDir, port = 0 }) {
  const send = (res, status, body, type = 'application/json') => {
    res.writeHead(status, { 'Content-Type': type });
    res.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const p = decodeURIComponent(url.pathname);
    if (p === '/api/health') return send(res, 200, { ok: true, mock: true });
    if (p === '/api/traces' || p === '/api/traces/') {
      const list = readdirSync(tracesDir).filter((f) => f.endsWith('.json')).map((name) => {
        const size = statSync(join(tracesDir, name)).size;
        try {
          const t = JSON.parse(readFileSync(join(tracesDir, name), 'utf8'));
          return { name, size, model: t.meta?.model?.file ?? '', backend: t.meta?.backend ?? '', matmul_path: t.meta?.matmul_path ?? '',
                   steps: (t.steps ?? t.phases ?? []).length, tokens: 0, recorded_at: t.meta?.recorded_at ?? '' };
        } catch (e) { return { name, size, error: `not valid JSON: ${e.message}` }; }
      });
      return send(res, 200, list);
    }
    if (p.startsWith('/api/traces/')) {
      const name = p.slice('/api/traces/'.length);
      if (name.includes('/') || name.includes('..')) return send(res, 400, { error: 'bad name' });
      const f = join(tracesDir, name);
      return existsSync(f) ? send(res, 200, readFileSync(f)) : send(res, 404, { error: `trace: no trace named '${name}'` });
    }
    if (p === '/api/compare') {
      const f = join(tracesDir, 'compare', `${url.searchParams.get('a')}__${url.searchParams.get('b')}.json`);
      return existsSync(f) ? send(res, 200, readFileSync(f)) : send(res, 422, { error: 'compare: no comparison fixture for these traces' });
    }
    const file = resolve(webDir, '.' + (p === '/' ? '/index.html' : p));
    if (!file.startsWith(resolve(webDir)) || !existsSync(file) || statSync(file).isDirectory()) return send(res, 404, { error: 'not found' });
    send(res, 200, readFileSync(file), TYPES[extname(file)] ?? 'application/octet-stream');
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok({ port: server.address().port, close: () => server.close() })));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [tracesDir = 'web/test/fixtures/out', port = '8090'] = process.argv.slice(2);
  startMockServer({ tracesDir, webDir: 'web/dist', port: Number(port) }).then((s) => console.log(`mock minfer-viz on http://127.0.0.1:${s.port}/`));
}
