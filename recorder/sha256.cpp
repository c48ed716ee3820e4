#include "sha256.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"

namespace minfer::trace {
namespace {

struct MdCtx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~MdCtx() { EVP_MD_CTX_free(ctx); }
};

std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (unsigned i = 0; i < n; ++i) {
    out[2 * i] = digits[d[i] >> 4];
    out[2 * i + 1] = digits[d[i] & 15];
  }
  return out;
}

void check(int ok, const std::string& what) {
  if (ok != 1) fail(what, ": OpenSSL SHA-256 failed");
}

}  // namespace

std::string digest_cache_dir(const Environment& env) {
  if (const std::string d = env_text(env, "MINFER_CACHE_DIR"); !d.empty()) return d;
  if (const std::string d = env_text(env, "XDG_CACHE_HOME"); !d.empty()) return d + "/minfer";
  if (const std::string d = env_text(env, "HOME"); !d.empty()) return d + "/.cache/minfer";
  return "";
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  check(EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr), "sha256");
  return hex(md, len);
}

std::string sha256_cache_path(const std::string& path, const std::string& dir) {
  struct stat st {};
  if (dir.empty() || ::stat(path.c_str(), &st) != 0) return "";
  std::error_code ec;
  const std::string canon = std::filesystem::weakly_canonical(path, ec).string();
  const std::string id = canon + "|" + std::to_string(st.st_dev) + "|" + std::to_string(st.st_ino) + "|" +
                         std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
                         std::to_string(st.st_mtim.tv_nsec);
  return dir + "/sha256/" + sha256_hex(id.data(), id.size());
}

std::string sha256_file(const std::string& path, const std::string& cache_dir) {
  const std::string cached = sha256_cache_path(path, cache_dir);
  if (!cached.empty()) {
    std::ifstream in(cached);
    std::string digest;
    if (in >> digest && digest.size() == 64 && digest.find_first_not_of("0123456789abcdef") == std::string::npos)
      return digest;
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open for hashing: ", std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> guard(f, &std::fclose);
  MdCtx md;
  if (!md.ctx) fail(path, ": OpenSSL could not allocate a digest context");
  check(EVP_DigestInit_ex(md.ctx, EVP_sha256(), nullptr), path);
  std::vector<unsigned char> buf(size_t(4) << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) check(EVP_DigestUpdate(md.ctx, buf.data(), n), path);
  if (std::ferror(f)) fail(path, ": read error while hashing");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  check(EVP_DigestFinal_ex(md.ctx, out, &len), path);
  const std::string digest = hex(out, len);
  if (!cached.empty()) {  // best effort: a read-only home just means no cache
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(cached).parent_path(), ec);
    const std::string tmp = cached + ".tmp" + std::to_string(::getpid());
    if (FILE* w = std::fopen(tmp.c_str(), "w")) {
      const bool ok = std::fputs((digest + "\n").c_str(), w) >= 0;
      if (std::fclose(w) == 0 && ok) std::rename(tmp.c_str(), cached.c_str());
      else std::remove(tmp.c_str());
    }
  }
  return digest;
}

}  // namespace minfer::trace
