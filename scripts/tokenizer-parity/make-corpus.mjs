#!/usr/bin/env node
// Writes the tokenizer parity corpus: a JSON array of >= 10,000 strings, the same every run
// (seeded PRNG, no dependence on the clock or the machine). Each generator below targets one
// thing a tokenizer can get wrong; "mixed" lines splice fragments of all of them together.
//
// Usage: node scripts/tokenizer-parity/make-corpus.mjs OUT.json [LINES_PER_KIND]
import { writeFileSync } from "node:fs";

const outPath = process.argv[2];
if (!outPath) {
  console.error("usage: make-corpus.mjs OUT.json [LINES_PER_KIND]");
  process.exit(2);
}
const perKind = Number(process.argv[3] ?? 750);

// mulberry32: small, fast, deterministic.
let state = 0x5eed1234;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rand() * n);
const pick = (a) => a[int(a.length)];
const chance = (p) => rand() < p;
const repeat = (n, f) => Array.from({ length: n }, f);
const cp = (c) => String.fromCodePoint(c);
const range = (lo, hi) => cp(lo + int(hi - lo + 1));

// ---- ASCII prose with contractions in every case --------------------------------------------
const words = ("the of and to in is it that was for on are with as his they be at one have this from " +
  "or had by hot word but what some we can out other were all there when up use your how said an each " +
  "she which do their time if will way about many then them write would like so these her long make " +
  "thing see him two has look more day could go come did number sound no most people my over know " +
  "water than call first who may down side been now find any new work part take get place made live " +
  "where after back little only round man year came show every good me give our under name very " +
  "through just form sentence great think say help low line differ turn cause much mean before move " +
  "right boy old too same tell does set three want air well also play small end put home read hand " +
  "port large spell add even land here must big high such follow act why ask men change went light " +
  "kind off need house picture try us again animal point mother world near build self earth father " +
  "Tokenizer GGUF Qwen CUDA llama.cpp HuggingFace JSON API URL HTTP GPU CPU NaN Inf").split(" ");
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE",
  "'M", "'LL", "'Ll", "'lL", "'D", "n't", "N'T", "'", "''", "'x", "'sup", "'ss", "’s", "’ll", "`s"];
const punct = [".", ",", "!", "?", ";", ":", "...", " -", " --", " —", "?!", ".)", "\"", "'", "(", ")"];
function sentence() {
  const n = 3 + int(14);
  let s = "";
  for (let i = 0; i < n; i++) {
    let w = pick(words);
    if (chance(0.12)) w = w.toUpperCase();
    else if (i === 0 || chance(0.1)) w = w[0].toUpperCase() + w.slice(1);
    if (chance(0.15)) w += pick(contractions);
    if (chance(0.08)) w += pick(punct);
    s += (i && !chance(0.03) ? " " : "") + w;
  }
  return s + pick([".", "!", "?", "", "...", ".\"", " :)"]);
}
function prose() {
  return repeat(1 + int(3), sentence).join(pick([" ", "  ", " ", "\n", "\r\n", "\t"]));
}

// ---- Code -------------------------------------------------------------------------------------
const codeLines = [
  "int main(int argc, char** argv) {", "  return 0;", "}", "for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];",
  "def forward(self, x: torch.Tensor) -> torch.Tensor:", "    return self.proj(F.silu(self.gate(x)) * self.up(x))",
  "const ids = tokenizer.encode(text, { add_special_tokens: false });", "if (x != nullptr && x->next == NULL) {",
  "\t\tprintf(\"%d %s\\n\", count, name);", "#include <vector>", "#define MAX(a, b) ((a) > (b) ? (a) : (b))",
  "    // TODO(minfer): fuse rms_norm + matmul", "let y = x.map((v) => v ** 2).filter(Boolean);", "SELECT id, name FROM users WHERE age >= 21;",
  "x = {'key': [1, 2, 3], \"other\": None}", "assert len(tokens) == 151936, f\"bad vocab {len(tokens)}\"",
  "template <typename T> T clamp(T v, T lo, T hi) { return v < lo ? lo : v > hi ? hi : v; }", "<div class=\"a\">&nbsp;</div>",
  "std::unordered_map<std::string, int32_t> id_of;", "  } else if (c == '\\r' || c == '\\n') {", "fn main() -> Result<(), Box<dyn Error>> {",
  "$ cmake -S . -B build -G Ninja && ninja -C build", "a+=b;c-=d;e*=f;g/=h;i%=j;k<<=1;l>>=2;m&=n;o|=p;q^=r;", "0x7fffffff 0b1010 1e-9 3.14159f 1_000_000",
  "@property\n    def name(self):", "    except KeyError as e:\n        raise ValueError(str(e)) from e", "if __name__ == \"__main__\":\n    main()",
  "/* block comment */ /** doc */ /// triple", "{{ messages[0]['content'] }}{% if add_generation_prompt %}", "~!@#$%^&*()_+`-=[]\\{}|;':\",./<>?",
];
function code() {
  const n = 1 + int(4);
  const indent = pick(["", "  ", "    ", "\t", "\t\t", "        "]);
  return repeat(n, () => indent + pick(codeLines) + (chance(0.1) ? pick([" ", "  ", "\t"]) : "")).join(pick(["\n", "\r\n", "\n\n"]));
}

// ---- Scripts ----------------------------------------------------------------------------------
const chinese = ["你好", "世界", "我们", "今天", "天气", "很好", "机器学习", "深度", "模型", "推理", "引擎", "中文", "分词器",
  "测试", "北京", "上海", "人工智能", "自然语言处理", "数据", "的", "了", "是", "在", "不", "有", "这", "个", "上", "们", "来",
  "龘", "𠀀", "𪚥", "鱻", "〇"];
const cjkPunct = ["，", "。", "！", "？", "、", "：", "；", "（", "）", "《", "》", "“", "”", "…", "——", "【", "】", "·"];
function cjk() {
  return repeat(2 + int(10), () => pick(chinese) + (chance(0.3) ? pick(cjkPunct) : "")).join(chance(0.2) ? " " : "");
}
const hira = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽゃゅょっー";
const kata = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンガギグゲゴヴァィゥェォッー";
const kanji = ["日本", "東京", "漢字", "言語", "学生", "先生", "電車", "時間", "今日", "明日", "私", "猫", "犬", "食べる", "行く"];
function japanese() {
  return repeat(2 + int(6), () => {
    const k = int(4);
    if (k === 0) return pick(kanji);
    if (k === 1) return repeat(1 + int(4), () => pick([...hira])).join("");
    if (k === 2) return repeat(2 + int(5), () => pick([...kata])).join("");
    return pick(["「", "」", "。", "、", "！", "？", "・", "ｶﾀｶﾅ", "ＡＢＣ１２３", "〜"]);
  }).join("");
}
const hangulWords = ["안녕하세요", "세계", "한국어", "토크나이저", "모델", "서울", "감사합니다", "사랑", "컴퓨터", "학교", "읽다", "값"];
function korean() {
  const parts = repeat(2 + int(6), () => chance(0.15) ? range(0xac00, 0xd7a3) : pick(hangulWords));
  return parts.join(pick([" ", " ", "", ", ", ". "])) + pick(["", ".", "?", "!"]);
}
const arabicWords = ["مرحبا", "بالعالم", "اللغة", "العربية", "كتاب", "مدرسة", "الذكاء", "الاصطناعي", "سلام", "شكرا", "مُحَمَّد", "كِتَابٌ"];
function arabic() {
  return repeat(2 + int(7), () => pick(arabicWords) + (chance(0.2) ? pick(["،", "؟", ".", " ١٢٣", " ٤٥٦٧", " 2024", "ـــ"]) : "")).join(" ");
}
const hindiWords = ["नमस्ते", "दुनिया", "भारत", "हिन्दी", "भाषा", "कृत्रिम", "बुद्धिमत्ता", "क़िताब", "ज़िंदगी", "१२३४", "श्री", "प्रेम", "स्कूल", "द्वार"];
function hindi() {
  return repeat(2 + int(7), () => pick(hindiWords)).join(chance(0.8) ? " " : "") + pick(["", "।", "॥", "?"]);
}
const otherScripts = ["Привет, мир!", "Ελληνικά γράμματα", "עברית שָׁלוֹם", "ภาษาไทย สวัสดี", "Tiếng Việt có dấu", "Ünïcödé çåsé",
  "ქართული", "Հայերեն", "አማርኛ", "ᏣᎳᎩ", "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐 𝕕𝕠𝕦𝕓𝕝𝕖", "ﬁﬂ ligatures", "Ⅻ ⅷ ½ ¾ ² ³ ①②", "ß ẞ ſ ﬀ Kelvin K Å"];

// ---- Emoji --------------------------------------------------------------------------------------
const emoji = ["😀", "😂", "🥲", "❤️", "👍", "👍🏻", "👍🏽", "👍🏿", "👋🏼", "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏾‍🚀", "🏳️‍🌈", "🏴‍☠️",
  "❤️‍🔥", "🇺🇸", "🇯🇵", "🇩🇪", "🇨🇳", "🇧🇷", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "©️", "™", "☕", "🫠", "🦀", "🐍", "✅", "⚠️", "🔥🔥🔥"];
function emojiLine() {
  return repeat(1 + int(8), () => pick(emoji) + (chance(0.4) ? " " + pick(words) : "")).join(pick(["", " ", "  "]));
}

// ---- Numbers ----------------------------------------------------------------------------------
function numbers() {
  const k = int(8);
  const digits = (n) => repeat(n, () => String(int(10))).join("");
  if (k === 0) return digits(1 + int(40));
  if (k === 1) return `${digits(1 + int(4))},${digits(3)},${digits(3)}.${digits(2)}`;
  if (k === 2) return `+1 (${digits(3)}) ${digits(3)}-${digits(4)}`;
  if (k === 3) return `${2000 + int(30)}-${String(1 + int(12)).padStart(2, "0")}-${String(1 + int(28)).padStart(2, "0")}T${digits(2)}:${digits(2)}:${digits(2)}Z`;
  if (k === 4) return `${(rand() * 1e6).toFixed(int(8))} ${(rand() * 1e-3).toExponential(3)} -${digits(5)}`;
  if (k === 5) return `v${int(10)}.${int(30)}.${int(100)} 0x${int(2 ** 31).toString(16)} ${digits(20)}${pick(["", "th", "st", "%", "px", "ms"])}`;
  if (k === 6) return `${sentence()} ${digits(3 + int(10))} ${pick(words)}${digits(2)}`;
  return repeat(3 + int(5), () => digits(1 + int(6))).join(pick([" ", ",", ".", "/", ":", " | "]));
}

// ---- Whitespace ---------------------------------------------------------------------------------
const spaces = [" ", "  ", "   ", "    ", "\t", "\t\t", " \t", "\n", "\r\n", "\n\n", "\r\n\r\n", "\r", " \n ", "\u00a0",
  "\u3000", "\u2028", "\u2029", "\ufeff", "\u0085", "\u200b", "\u000b", "\u000c", "\u2003", "\u202f"];
function whitespace() {
  const k = int(5);
  if (k === 0) return repeat(1 + int(6), () => pick(spaces)).join("");
  if (k === 1) return pick(spaces) + pick(words) + repeat(1 + int(4), () => pick(spaces)).join("");
  if (k === 2) return repeat(2 + int(6), () => pick(words) + repeat(1 + int(3), () => pick(spaces)).join("")).join("");
  if (k === 3) return " ".repeat(1 + int(40)) + pick(words) + " ".repeat(int(12));
  return repeat(2 + int(4), () => pick([prose(), code(), pick(words)])).join(pick(["\n", "\r\n", "\n\n\n", " \r\n", "\t\n"]));
}

// ---- Special tokens ---------------------------------------------------------------------------
const specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
  "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|vision_start|>", "<|image_pad|>", "<|file_sep|>", "<tool_response>"];
const nearMisses = ["<|im_start", "<|im_end|", "<|im_start |>", "< |im_end|>", "<|IM_START|>", "<|im_start|", "|>", "<|", "<think", "</think",
  "<<|im_start|>>", "<|im_start|><|im_start|>", "<|endoftext|>\u0338", "<think>\u0301"];
function chat() {
  const k = int(4);
  if (k === 0) {
    return `<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n${prose()}<|im_end|>\n<|im_start|>assistant\n` +
      (chance(0.5) ? `<think>\n${sentence()}\n</think>\n\n` : "") + `${prose()}<|im_end|>`;
  }
  if (k === 1) return repeat(1 + int(5), () => pick(chance(0.7) ? specials : nearMisses) + (chance(0.7) ? pick([sentence(), cjk(), emojiLine(), ""]) : "")).join("");
  if (k === 2) return `<|fim_prefix|>${code()}<|fim_suffix|>${code()}<|fim_middle|>`;
  return `${pick(words)}${pick(specials)}${pick(words)}${pick(nearMisses)}${pick(spaces)}${pick(specials)}`;
}

// ---- Text that is not in NFC (the normalizer must compose it) -----------------------------------
const decomposed = ["e\u0301", "A\u030a", "o\u0308", "n\u0303", "c\u0327", "a\u0323\u0302", "a\u0302\u0323", "u\u0308\u0304",
  "\u1100\u1161\u11a8", "\u1112\u1161\u11ab", "\u212b", "\u2126", "\u0958", "\u0915\u093c", "\u0344", "e\u0301\u0301",
  "\u05e9\u05bc\u05c1", "\u05e9\u05c1\u05bc", "\u03b1\u0313\u0301\u0345", "\u0b47\u0b3e", "x\u0338", "=\u0338", "<\u0338", "\u0301start"];
function nonNfc() {
  return repeat(1 + int(6), () => (chance(0.5) ? pick(words) : "") + pick(decomposed) + (chance(0.5) ? pick(words) : "")).join(chance(0.7) ? " " : "");
}

// ---- Random code points from assigned, long-established blocks ------------------------------------
const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff], [0x600, 0x6ff],
  [0x900, 0x97f], [0xe00, 0xe5b], [0x1100, 0x11ff], [0x1e00, 0x1fff], [0x2000, 0x206f], [0x20a0, 0x20bf], [0x2100, 0x218b],
  [0x2190, 0x23ff], [0x2500, 0x27bf], [0x3000, 0x30ff], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xfb00, 0xfb06], [0xff01, 0xff9f],
  [0x1d400, 0x1d4ff], [0x1f300, 0x1f64f], [0x20000, 0x2a6d6]];
const assigned = /^\p{Assigned}$/u;
function soup() {
  let s = "";
  for (let n = 1 + int(30); n > 0; n--) {
    const [lo, hi] = pick(blocks);
    const c = range(lo, hi);
    if (assigned.test(c)) s += c;
    if (chance(0.1)) s += " ";
  }
  return s;
}

function mixed() {
  const kinds = [prose, code, cjk, japanese, korean, arabic, hindi, emojiLine, numbers, whitespace, chat, nonNfc, soup,
    () => pick(otherScripts)];
  return repeat(2 + int(4), () => pick(kinds)()).join(pick(["", " ", "\n", "\r\n", "\t", "  "]));
}

const kinds = { prose, code, cjk, japanese, korean, arabic, hindi, emojiLine, numbers, whitespace, chat, nonNfc, soup, mixed };
const lines = ["", " ", "\n", "\r\n", "'", "''", "'s", "<|im_start|>", "<|im_start|><|im_end|>", ...otherScripts, ...specials,
  ...nearMisses, ...decomposed, ...contractions, ...emoji, ...spaces];
for (const gen of Object.values(kinds)) for (let i = 0; i < perKind; i++) lines.push(gen());
// A few long lines: long words, long whitespace runs, long digit strings, a long mixed paragraph.
lines.push("a".repeat(3000), " ".repeat(2000) + "x", "9".repeat(1500), "😀".repeat(500), repeat(60, mixed).join(" "),
  "\r\n".repeat(300), "\t ".repeat(400) + "end", "ab".repeat(1000), "Supercalifragilisticexpialidocious".repeat(40));

writeFileSync(outPath, JSON.stringify(lines));
console.log(`wrote ${outPath}: ${lines.length} lines`);
