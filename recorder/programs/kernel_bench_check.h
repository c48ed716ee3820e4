// minfer-kernel-bench's CPU check: a sample of a launch's outputs against the float64 reference
// computed from the same bytes (quant_test_data.h's q8_1_reference, or the f16 dot), with the
// error measured against sum_k |w_k x_k| and a stated tolerance.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/weight_type.h"
#include "quant/quant.h"
#include "tests/quant_test_data.h"

namespace minfer::kbench {

using testing::Q8Reference;

// Every compared element within tol * scale + abs_tol of the reference, and finite; max_err is
// the largest |got - want| / scale seen (infinite for a non-finite element).
struct Check {
  double tol, abs_tol;
  double max_err = 0;
  int64_t elements = 0, bad = 0;
  void add(double got, double want, double scale) {
    ++elements;
    const double d = std::fabs(got - want);
    if (!std::isfinite(got) || d > tol * scale + abs_tol) ++bad;
    max_err = std::max(max_err, std::isfinite(got) ? (scale > 0 ? d / scale : 0.0) : INFINITY);
  }
  bool ok() const { return elements > 0 && bad == 0; }
};

// The matvec / int8 GEMM outputs against the float64 reference: the integer dots are exact (and
// gemv_float's products), what is left is f32 rounding of scales and partial sums
// (test_cuda_mmvq / test_cuda_mmq's bound). The f16 GEMM accumulates in f32 on the tensor cores
// over up to 18944 products: 1e-4.
inline Check matvec_check() { return Check{2e-5, 1e-6}; }
inline Check f16_gemm_check() { return Check{1e-4, 1e-6}; }
// Elementwise against the CPU twin (rms_norm, swiglu): 1e-6 relative (test_cuda_elementwise).
inline Check elementwise_check() { return Check{1e-6, 1e-12}; }

// The output rows the CPU checks, as [begin, end): all of them when that is at most 2^24
// products (n_in * the checked tokens per row), else 64 rows at the start, middle and end.
inline std::vector<std::pair<int64_t, int64_t>> checked_rows(int64_t n_out, int64_t products_per_row) {
  if (n_out * products_per_row <= (int64_t{1} << 24)) return {{0, n_out}};
  const int64_t k = 64, mid = n_out / 2 - k / 2;
  return {{0, k}, {mid, mid + k}, {n_out - k, n_out}};
}

// The float64 reference (q8_1_reference) of rows [r0, r1) of w against nt tokens' Q8_1 rows xq:
// y[t * (r1 - r0) + o].
inline Q8Reference q8_rows_reference(WeightType t, const std::vector<uint8_t>& w, int64_t n_in, int64_t r0,
                                     int64_t r1, const std::vector<uint8_t>& xq, int64_t nt) {
  const size_t rb = row_bytes(t, n_in);
  const std::vector<uint8_t> slice(w.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r0) * rb),
                                   w.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r1) * rb));
  return testing::q8_1_reference(t, slice, r1 - r0, n_in, xq, nt, nullptr);
}

// sum_k w[o][k] x[t][k] and sum_k |w[o][k] x[t][k]| in float64 for rows [r0, r1) of F16 weights.
inline Q8Reference f16_rows_reference(const std::vector<uint8_t>& w, int64_t n_in, int64_t r0, int64_t r1,
                                      const std::vector<float>& x, int64_t nt) {
  Q8Reference r;
  const int64_t rows = r1 - r0;
  r.y.assign(static_cast<size_t>(nt * rows), 0.0);
  r.mag.assign(r.y.size(), 0.0);
  std::vector<float> wd(static_cast<size_t>(n_in));
  for (int64_t o = 0; o < rows; ++o) {
    dequantize_row(WeightType::F16, w.data() + (r0 + o) * n_in * 2, wd.data(), n_in);
    for (int64_t tk = 0; tk < nt; ++tk) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < n_in; ++k) {
        const double p = static_cast<double>(wd[k]) * x[tk * n_in + k];
        acc += p;
        mag += std::fabs(p);
      }
      r.y[tk * rows + o] = acc;
      r.mag[tk * rows + o] = mag;
    }
  }
  return r;
}

// Q8_1 rows of the given tokens, from [nt][n_in] Q8_1 bytes.
inline std::vector<uint8_t> token_rows(const std::vector<uint8_t>& xq, int64_t n_in,
                                       const std::vector<int64_t>& tokens) {
  const size_t rb = row_bytes(WeightType::Q8_1, n_in);
  std::vector<uint8_t> out;
  for (int64_t t : tokens) {
    const auto row = xq.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(t) * rb);
    out.insert(out.end(), row, row + static_cast<ptrdiff_t>(rb));
  }
  return out;
}

// Adds to c the launch's output got ([nt][n_out]) at `tokens` x the checked rows against
// ref(r0, r1), the float64 reference of rows [r0, r1) for those tokens (y[i * (r1 - r0) + o - r0]).
inline void compare_rows(Check& c, const std::vector<float>& got, int64_t n_out, int64_t n_in,
                         const std::vector<int64_t>& tokens, const std::function<Q8Reference(int64_t, int64_t)>& ref) {
  const int64_t nt = static_cast<int64_t>(tokens.size());
  for (auto [r0, r1] : checked_rows(n_out, n_in * nt)) {
    const Q8Reference want = ref(r0, r1);
    for (int64_t i = 0; i < nt; ++i)
      for (int64_t o = r0; o < r1; ++o) {
        const size_t k = static_cast<size_t>(i * (r1 - r0) + o - r0);
        c.add(got[static_cast<size_t>(tokens[static_cast<size_t>(i)] * n_out + o)], want.y[k], want.mag[k]);
      }
  }
}

}  // namespace minfer::kbench
