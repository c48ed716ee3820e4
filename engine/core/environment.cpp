#include "core/environment.h"

#include <string_view>

#include "core/parse_number.h"

extern char** environ;  // POSIX: the process's variables, "NAME=value" each

namespace minfer {

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));  // the first one stays
  }
  return env;
}

std::string env_text(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

bool env_equals(const Environment& env, const std::string& name, const std::string& value) {
  const auto it = env.find(name);
  return it != env.end() && it->second == value;
}

int64_t env_int(const Environment& env, const char* name, int64_t lo, int64_t hi, int64_t unset) {
  const std::string v = env_text(env, name);
  return v.empty() ? unset : parse_int(v, name, lo, hi);
}

double env_number(const Environment& env, const char* name, double lo, double hi, double unset) {
  const std::string v = env_text(env, name);
  return v.empty() ? unset : parse_number(v, name, lo, hi);
}

}  // namespace minfer
