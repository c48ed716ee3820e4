#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace minfer::byte_level {
namespace {

struct Alphabet {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 324> to_byte{};  // the alphabet's code points are all below 256 + 68

  Alphabet() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return alphabet().to_char[b]; }

int char_to_byte(char32_t c) { return c < alphabet().to_byte.size() ? alphabet().to_byte[c] : -1; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) unicode::append_utf8(out, byte_to_char(static_cast<uint8_t>(b)));
  return out;
}

std::string decode(std::string_view spelling, bool* ok) {
  std::string out;
  out.reserve(spelling.size());
  if (ok) *ok = true;
  for (char32_t c : unicode::decode_utf8(spelling)) {
    int b = char_to_byte(c);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      unicode::append_utf8(out, c);
      if (ok) *ok = false;
    }
  }
  return out;
}

}  // namespace minfer::byte_level
