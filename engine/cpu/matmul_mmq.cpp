// The MMQ path: quantize the activation rows once, then one integer dot product per
// (token, output row). Threads split the output rows; each thread walks its rows in small
// groups against every token so a group's weight bytes are read from memory once.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "cpu/matmul.h"
#include "quant/quant.h"
#include "quant/vec_dot_paths.h"

namespace minfer {

void check_matmul_args(WeightType wt, int64_t n_out, int64_t n_in, int64_t nt, const char* who) {
  if (info(wt).activation_only) fail(who, ": ", name(wt), " is an activation format, not a weight type");
  if (n_out <= 0 || n_in <= 0 || nt < 0)
    fail(who, ": bad shape (out ", n_out, ", in ", n_in, ", tokens ", nt, ")");
  if (n_in % info(wt).block_elems != 0)
    fail(who, ": weight rows of ", n_in, " elements are not a multiple of ", name(wt),
         "'s block size ", info(wt).block_elems);
}

void matmul_mmq(const void* w, WeightType wt, int64_t n_out, int64_t n_in, const float* x,
                int64_t nt, const float* bias, float* y, ThreadPool& pool) {
  check_matmul_args(wt, n_out, n_in, nt, "matmul_mmq");
  if (nt == 0) return;
  const WeightType at = vec_dot_type(wt);
  // Float weights gain nothing from a per-(token,row) dot once several tokens share a tile.
  if (at == WeightType::F32 && nt >= 4) return matmul_float(w, wt, n_out, n_in, x, nt, bias, y, pool);

  const size_t w_row = row_bytes(wt, n_in);
  const size_t a_row = row_bytes(at, n_in);
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);  // F32 activations are used as is
  static thread_local std::vector<uint8_t> qx;               // reused across calls
  if (at != WeightType::F32) {
    qx.resize(a_row * static_cast<size_t>(nt));
    uint8_t* q = qx.data();
    pool.parallel_for(nt, std::max<int64_t>(1, 4096 / n_in), [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) quantize_row(at, x + t * n_in, q + t * a_row, n_in);
    });
    act = q;
  }

  const VecDotFn dot = vec_dot_fn(wt);
  const VecDot4Fn dot4 = nt >= 4 ? vec_dot4_fn(wt) : nullptr;
  // Tokens past the four-token groups (all of them when decoding) go through the GEMV kernel,
  // its activation rows prepared once here rather than per weight row in every thread.
  const int64_t t_single = dot4 ? nt / 4 * 4 : 0;
  const GemvKernel gemv = gemv_kernel(wt);
  static thread_local std::vector<uint8_t> gemv_prep;
  const size_t prep_row = gemv.rows ? (gemv.prep_bytes(n_in) + 63) / 64 * 64 : 0;
  if (gemv.rows) {
    gemv_prep.resize(prep_row * static_cast<size_t>(nt - t_single));
    for (int64_t t = t_single; t < nt; ++t)
      gemv.prep(n_in, act + static_cast<size_t>(t) * a_row, gemv_prep.data() + (t - t_single) * prep_row);
  }
  const uint8_t* prepared = gemv_prep.data();  // the caller's buffer: workers' thread_locals differ
  const auto* wb = static_cast<const uint8_t*>(w);
  constexpr int64_t kRowGroup = 16;  // rows whose weights stay in L1/L2 while tokens stream past
  // Tiny products are not worth waking the threads for.
  const int64_t work = n_out * n_in * nt;
  const int64_t grain = work < (1 << 16) ? n_out : std::min<int64_t>(n_out, nt > 1 ? kRowGroup : 8);
  pool.parallel_for(n_out, grain, [&](int64_t r0, int64_t r1, int) {
    for (int64_t g0 = r0; g0 < r1; g0 += kRowGroup) {
      const int64_t g1 = std::min(r1, g0 + kRowGroup);
      int64_t t = 0;
      if (dot4)  // four tokens per weight-block unpack
        for (; t + 4 <= nt; t += 4) {
          const uint8_t* a = act + static_cast<size_t>(t) * a_row;
          for (int64_t r = g0; r < g1; ++r) {
            float out[4];
            dot4(n_in, wb + static_cast<size_t>(r) * w_row, a, a_row, out);
            for (int j = 0; j < 4; ++j) y[(t + j) * n_out + r] = out[j] + (bias ? bias[r] : 0.0f);
          }
        }
      for (; t < nt; ++t) {
        const uint8_t* a = act + static_cast<size_t>(t) * a_row;
        float* yt = y + t * n_out;
        if (gemv.rows) {
          gemv.rows(n_in, wb + static_cast<size_t>(g0) * w_row, w_row, g1 - g0,
                    prepared + (t - t_single) * prep_row, yt + g0);
          if (bias)
            for (int64_t r = g0; r < g1; ++r) yt[r] += bias[r];
          continue;
        }
        for (int64_t r = g0; r < g1; ++r)
          yt[r] = dot(n_in, wb + static_cast<size_t>(r) * w_row, a) + (bias ? bias[r] : 0.0f);
      }
    }
  });
}

}  // namespace minfer
