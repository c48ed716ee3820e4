// The device's limits for the roofline: the twin of recorder/device_roofs.cpp (the datasheet
// sources of every figure are listed there). Bandwidth: meta.device_limits.read_gbs when the
// trace recorded it ("measured"), else the table's nominal DRAM figure ("nominal").
import type { OpsKind } from './node-work';
import type { TraceMeta } from './types';

export interface DevicePeaks { match: string; label: string; int8Tops: number; f16Tflops: number; f32Tflops: number; dramGbs: number }

// Dense peaks (no sparsity); "H100 PCIe" before "H100".
const PEAKS: DevicePeaks[] = [
  { match: 'H200', label: 'H200 SXM (datasheet)', int8Tops: 1979, f16Tflops: 989, f32Tflops: 67, dramGbs: 4800 },
  { match: 'H100 PCIe', label: 'H100 PCIe (datasheet)', int8Tops: 1513, f16Tflops: 756, f32Tflops: 51, dramGbs: 2000 },
  { match: 'H100', label: 'H100 SXM (datasheet)', int8Tops: 1979, f16Tflops: 989, f32Tflops: 67, dramGbs: 3350 },
  { match: 'A100', label: 'A100 80GB SXM (datasheet)', int8Tops: 624, f16Tflops: 312, f32Tflops: 19.5, dramGbs: 2039 },
  { match: 'L40S', label: 'L40S (datasheet)', int8Tops: 733, f16Tflops: 362, f32Tflops: 91.6, dramGbs: 864 },
  { match: 'RTX 4090', label: 'GeForce RTX 4090 (Ada whitepaper)', int8Tops: 660.6, f16Tflops: 165.2, f32Tflops: 82.6, dramGbs: 1008 },
];

export function findDevicePeaks(device: string): DevicePeaks | null {
  return PEAKS.find((p) => device.includes(p.match)) ?? null;
}

export interface Roofs {
  bandwidthGbs: number | null;
  bandwidthSource: 'measured' | 'nominal' | null;
  peaks: DevicePeaks | null;
}

export function traceRoofs(meta: TraceMeta): Roofs {
  const peaks = meta.backend === 'cuda' ? findDevicePeaks(meta.device) : null;   // a CPU has no tensor-core peaks
  const measured = meta.deviceLimits?.readGbs;
  if (measured && measured > 0) return { bandwidthGbs: measured, bandwidthSource: 'measured', peaks };
  return peaks ? { bandwidthGbs: peaks.dramGbs, bandwidthSource: 'nominal', peaks } : { bandwidthGbs: null, bandwidthSource: null, peaks };
}

// Peak rate for ops of a kind (ops/s), null when unknown.
export function peakOpsPerS(r: Roofs, k: OpsKind): number | null {
  if (!r.peaks) return null;
  return (k === 'int8' ? r.peaks.int8Tops : k === 'f16' ? r.peaks.f16Tflops : r.peaks.f32Tflops) * 1e12;
}

// The roofs in words, for legends and the roofline panel.
export function roofsNote(r: Roofs, device: string): string {
  const bw = r.bandwidthGbs === null ? 'bandwidth not recorded'
    : `bandwidth ${Math.round(r.bandwidthGbs)} GB/s ${r.bandwidthSource === 'measured' ? '(measured on the device)' : '(nominal datasheet figure: not recorded in this trace)'}`;
  const peaks = r.peaks ? `${r.peaks.label}: int8 ${r.peaks.int8Tops} TOPS, f16 ${r.peaks.f16Tflops} TFLOP/s, f32 ${r.peaks.f32Tflops} TFLOP/s (dense)`
    : `device "${device || 'unknown'}" is not in the peak table: no fraction of the roof`;
  return `${bw} · ${peaks}`;
}
