// SHA-256 of the model file for trace metadata (meta.model.sha256), by OpenSSL (libcrypto's
// EVP digest: several times faster than a portable C++ loop, SHA-NI where the CPU has it).
// A whole-file digest is cached by file identity (device, inode, size, mtime) in a cache
// directory (digest_cache_dir: $MINFER_CACHE_DIR, else $XDG_CACHE_HOME/minfer, else
// ~/.cache/minfer): a traced run of a multi-GB model hashes it once, not on every run.
#pragma once
#include <cstddef>
#include <string>

#include "core/environment.h"

namespace minfer::trace {

std::string sha256_hex(const void* data, size_t n);

// The digest cache's directory from the program's environment: $MINFER_CACHE_DIR, else
// $XDG_CACHE_HOME/minfer, else $HOME/.cache/minfer; "" when none of them is set.
std::string digest_cache_dir(const Environment& env);

// Hex digest of a whole file; throws Error naming the file when it cannot be read. Uses and
// fills the identity cache in cache_dir ("": no cache; an unwritable cache is skipped quietly).
std::string sha256_file(const std::string& path, const std::string& cache_dir);

// The cache file a digest of `path` is stored in under cache_dir ("" when cache_dir is "").
std::string sha256_cache_path(const std::string& path, const std::string& cache_dir);

}  // namespace minfer::trace
