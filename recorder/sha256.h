// SHA-256 of the model file for trace metadata (meta.model.sha256), by OpenSSL (libcrypto's
// EVP digest: several times faster than a portable C++ loop, SHA-NI where the CPU has it).
// A whole-file digest is cached by file identity (device, inode, size, mtime) under
// $MINFER_CACHE_DIR, else $XDG_CACHE_HOME/minfer, else ~/.cache/minfer: a traced run of a
// multi-GB model hashes it once, not on every run.
#pragma once
#include <cstddef>
#include <string>

namespace minfer::trace {

std::string sha256_hex(const void* data, size_t n);

// Hex digest of a whole file; throws Error naming the file when it cannot be read. Uses and
// fills the identity cache unless use_cache is false (an unwritable cache is skipped quietly).
std::string sha256_file(const std::string& path, bool use_cache = true);

// The cache file a digest of `path` is stored in ("" when no cache directory can be named).
std::string sha256_cache_path(const std::string& path);

}  // namespace minfer::trace
