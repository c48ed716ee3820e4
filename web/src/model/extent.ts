// Largest and smallest of many numbers. Math.max(...xs) passes every value as an argument and
// throws "Maximum call stack size exceeded" past ~100,000 of them (a 200,000-node graph).
export function maxOf(xs: Iterable<number>, empty = -Infinity): number {
  let m = empty, any = false;
  for (const x of xs) { m = any ? Math.max(m, x) : x; any = true; }
  return m;
}

export function minOf(xs: Iterable<number>, empty = Infinity): number {
  let m = empty, any = false;
  for (const x of xs) { m = any ? Math.min(m, x) : x; any = true; }
  return m;
}
