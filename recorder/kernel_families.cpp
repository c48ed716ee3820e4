#include "kernel_families.h"

#include <algorithm>
#include <map>

namespace minfer::trace {

std::string kernel_family(const std::string& demangled) {
  // The anonymous namespace's own parentheses would end the name at the first '('.
  std::string s = demangled;
  const std::string anon = "(anonymous namespace)::";
  for (size_t p; (p = s.find(anon)) != std::string::npos;) s.erase(p, anon.size());
  s = s.substr(0, s.find_first_of("<("));
  if (const size_t sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);  // "void "
  if (const size_t q = s.rfind("::"); q != std::string::npos) s = s.substr(q + 2);
  return s.empty() ? demangled : s;
}

KernelFamilies kernel_families(const std::vector<KernelRecord>& kernels) {
  KernelFamilies r;
  if (kernels.empty()) return r;
  std::map<std::string, KernelFamily> by_name;
  int64_t first = kernels.front().start_ns, last = first;
  for (const KernelRecord& k : kernels) {
    KernelFamily& f = by_name[kernel_family(k.name)];
    ++f.launches;
    f.total_us += static_cast<double>(k.duration_ns) / 1e3;
    r.sum_us += static_cast<double>(k.duration_ns) / 1e3;
    first = std::min(first, k.start_ns);
    last = std::max(last, k.start_ns + k.duration_ns);
  }
  for (auto& [name, f] : by_name) {
    f.name = name;
    r.families.push_back(f);
  }
  std::stable_sort(r.families.begin(), r.families.end(),
                   [](const KernelFamily& a, const KernelFamily& b) { return a.total_us > b.total_us; });
  r.launches = static_cast<int>(kernels.size());
  r.span_us = static_cast<double>(last - first) / 1e3;
  return r;
}

}  // namespace minfer::trace
