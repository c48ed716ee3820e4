// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical
// composition), as the Qwen tokenizer.json's "NFC" normalizer asks for. Data comes from
// unicode_tables.cpp; raw-byte markers (unicode::kRawByteBase + b) pass through unchanged.
#pragma once
#include <string>
#include <string_view>

namespace minfer::unicode {

std::u32string nfc(std::u32string_view text);

}  // namespace minfer::unicode
