// Whole-file reads of served files, byte for byte (trace text, gunzipped when needed, comes
// from the recorder's read_file_text).
#pragma once
#include <filesystem>
#include <string>

namespace minfer::viz {

// The file's bytes; throws minfer::Error naming the file when it cannot be read.
std::string read_file_bytes(const std::filesystem::path& path);

}  // namespace minfer::viz
