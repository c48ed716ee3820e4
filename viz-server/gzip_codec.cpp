#include "gzip_codec.h"

namespace minfer::viz {

bool looks_gzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

}  // namespace minfer::viz
