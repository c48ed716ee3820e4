// Checked field access over untrusted JSON: each getter names the JSON path on failure.
import { TraceError } from './errors';

export type Json = unknown;
export type Obj = Record<string, Json>;

export class Checker {
  constructor(readonly source: string) {}

  fail(path: string, problem: string): never {
    throw new TraceError(this.source, path, problem);
  }

  obj(v: Json, path: string): Obj {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) this.fail(path, `expected an object, got ${kind(v)}`);
    return v as Obj;
  }

  arr(v: Json, path: string): Json[] {
    if (!Array.isArray(v)) this.fail(path, `expected an array, got ${kind(v)}`);
    return v;
  }

  num(v: Json, path: string): number {
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(path, `expected a number, got ${kind(v)}`);
    return v;
  }

  int(v: Json, path: string): number {
    const n = this.num(v, path);
    if (!Number.isInteger(n)) this.fail(path, `expected an integer, got ${n}`);
    return n;
  }

  str(v: Json, path: string): string {
    if (typeof v !== 'string') this.fail(path, `expected a string, got ${kind(v)}`);
    return v;
  }

  optNum(v: Json, path: string): number | null {
    return v === undefined || v === null ? null : this.num(v, path);
  }

  // A number where the writer puts null for a non-finite value (NaN / ±Inf): null → NaN.
  numOrNaN(v: Json, path: string): number {
    return v === null ? NaN : this.num(v, path);
  }

  optStr(v: Json, path: string): string | null {
    return v === undefined || v === null ? null : this.str(v, path);
  }

  // Number arrays where null stands for NaN (the writer's encoding of non-finite cells).
  values(v: Json, path: string, expected?: number): Float32Array {
    const a = this.arr(v, path);
    if (expected !== undefined && a.length !== expected)
      this.fail(path, `expected ${expected} values, got ${a.length}`);
    const out = new Float32Array(a.length);
    for (let i = 0; i < a.length; i++) {
      const x = a[i];
      if (typeof x === 'number') out[i] = x;
      else if (x === null) out[i] = NaN;
      else this.fail(`${path}[${i}]`, `expected a number or null, got ${kind(x)}`);
    }
    return out;
  }
}

export function kind(v: Json): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing (field missing)';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v).slice(0, 40)}`;
}
