// Number formatting: every number the page shows goes through here, with its unit.
export function fmtNum(x: number | null | undefined, digits = 4): string {
  if (x === null || x === undefined) return '—';
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? '+∞' : '−∞';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(Math.max(1, digits - 2)).replace('e', 'e');
  return Number(x.toPrecision(digits)).toString();
}

export function fmtInt(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : Math.round(x).toLocaleString('en-US');
}

export function fmtUs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return '—';
  const a = Math.abs(us);
  if (a >= 1e6) return `${fmtNum(us / 1e6, 3)} s`;
  if (a >= 1e3) return `${fmtNum(us / 1e3, 3)} ms`;
  return `${fmtNum(us, 3)} µs`;
}

export function fmtMs(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : fmtUs(ms * 1000);
}

export function fmtSignedUs(us: number): string {
  return (us > 0 ? '+' : us < 0 ? '−' : '±') + fmtUs(Math.abs(us));
}

export function fmtProb(p: number | null | undefined): string {
  if (p === null || p === undefined) return '—';
  if (p >= 0.001) return `${(p * 100).toFixed(p >= 0.1 ? 1 : 2)} %`;
  return p >= 1e-8 ? `${Number((p * 100).toPrecision(2))} %` : `${(p * 100).toExponential(1)} %`;
}

export function fmtDb(db: number | null | undefined): string {
  if (db === null || db === undefined) return '—';
  return Number.isFinite(db) ? `${db.toFixed(1)} dB` : '∞ dB (identical)';
}

export function fmtNats(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : `${fmtNum(x, 3)} nats`;
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

// Token text with its invisible characters made visible.
export function tokenLabel(text: string): string {
  return text.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥').replace(/\r/g, '␍') || '∅';
}
