// Vite config for the web app: root is web/, output web/dist. `vite` (dev) proxies /api to a
// running minfer-viz (MINFER_VIZ_URL, default http://127.0.0.1:8080).
import { defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  server: {
    proxy: { '/api': process.env.MINFER_VIZ_URL ?? 'http://127.0.0.1:8080' },
  },
  test: {
    root: here,
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
