// Every number carries its unit: the formatters the views use.
import { describe, expect, it } from 'vitest';
import { fmtBytes, fmtDb, fmtNats, fmtNum, fmtProb, fmtSignedUs, fmtUs, tokenLabel } from '../src/ui/format';
import { valueScale } from '../src/charts/color-scales';

describe('format', () => {
  it('attaches units and scales', () => {
    expect(fmtUs(35.2)).toBe('35.2 µs');
    expect(fmtUs(12500)).toBe('12.5 ms');
    expect(fmtSignedUs(-2.5)).toBe('−2.5 µs');
    expect(fmtProb(0.3127)).toBe('31.3 %');
    expect(fmtProb(0.0003)).toBe('0.03 %');
    expect(fmtDb(21.34)).toBe('21.3 dB');
    expect(fmtDb(Infinity)).toMatch(/∞ dB/);
    expect(fmtNats(2.7101)).toBe('2.71 nats');
    expect(fmtBytes(25 * 1024 * 1024)).toBe('25.0 MiB');
    expect(fmtNum(NaN)).toBe('NaN');
    expect(fmtNum(1.23456e-5)).toMatch(/e-5$/);
    expect(tokenLabel(' a\n')).toBe('␣a↵');
  });
});

describe('heatmap colour scales', () => {
  // a row like real Qwen activations: small values and one channel near +30
  const values = new Float32Array(64).map((_, i) => (i === 7 ? 29.8 : Math.sin(i * 1.7) * 1.5));
  it('symlog keeps both the bulk and the outlier distinguishable', () => {
    const s = valueScale(values, 'symlog');
    expect(s.limit).toBeCloseTo(29.8, 4);
    expect(s.color(1.5)).not.toBe(s.color(0));
    expect(s.color(29.8)).not.toBe(s.color(1.5));
    expect(s.describe).toMatch(/symmetric-log/);
  });
  it('the quantile scale flags clipped outliers', () => {
    const s = valueScale(values, 'quantile');
    expect(s.clipped(29.8)).toBe(true);
    expect(s.clipped(1.0)).toBe(false);
    expect(s.describe).toMatch(/99th percentile/);
  });
});
