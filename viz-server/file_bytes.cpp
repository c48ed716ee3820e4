#include "file_bytes.h"

#include <fstream>

#include "core/error.h"

namespace minfer::viz {

std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open for reading");
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) fail(path.string(), ": cannot determine the file size");
  bytes.resize(static_cast<size_t>(size));
  in.seekg(0);
  in.read(bytes.data(), size);
  if (in.gcount() != size) fail(path.string(), ": short read (file changed while reading?)");
  return bytes;
}

}  // namespace minfer::viz
