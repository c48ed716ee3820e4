// The float path: each thread takes tiles of kTileOut output rows, dequantizes kTileK columns
// of them at a time into an f32 panel laid out k-major in strips of 16 rows, and runs a
// register-blocked kernel (up to 6 tokens x 16 outputs of FMA accumulators) over the panel.
// The panel (256 x 64 floats = 64 KiB) stays in L2 while every token passes over it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "cpu/matmul.h"
#include "quant/quant.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace minfer {
namespace {

constexpr int64_t kTileOut = 64;  // output rows per tile (4 strips)
constexpr int64_t kTileK = 256;   // columns per panel; a multiple of every block size
constexpr int kStrip = 16;        // outputs per strip = the kernel's width
constexpr int kMaxTokens = 6;     // tokens per kernel call

// y[m][j] += sum_k x[m][k] * panel[k][j] for m < mr, j < nc (nc <= 16, panel strip k-major).
void kernel_generic(int64_t kc, const float* x, int64_t ldx, const float* panel, float* y,
                    int64_t ldy, int mr, int nc) {
  float acc[kMaxTokens][kStrip] = {};
  for (int64_t k = 0; k < kc; ++k)
    for (int m = 0; m < mr; ++m) {
      const float xv = x[m * ldx + k];
      for (int j = 0; j < kStrip; ++j) acc[m][j] += xv * panel[k * kStrip + j];
    }
  for (int m = 0; m < mr; ++m)
    for (int j = 0; j < nc; ++j) y[m * ldy + j] += acc[m][j];
}

#if defined(__AVX2__) && defined(__FMA__)
template <int MR>
void kernel_avx2(int64_t kc, const float* x, int64_t ldx, const float* panel, float* y,
                 int64_t ldy, int nc) {
  // The m loops must unroll so the 2*MR accumulators live in registers.
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + k * kStrip);
    const __m256 w1 = _mm256_loadu_ps(panel + k * kStrip + 8);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_broadcast_ss(x + m * ldx + k);
      acc[m][0] = _mm256_fmadd_ps(xv, w0, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(xv, w1, acc[m][1]);
    }
  }
  if (nc == kStrip) {
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      float* ym = y + m * ldy;
      _mm256_storeu_ps(ym, _mm256_add_ps(_mm256_loadu_ps(ym), acc[m][0]));
      _mm256_storeu_ps(ym + 8, _mm256_add_ps(_mm256_loadu_ps(ym + 8), acc[m][1]));
    }
    return;
  }
  alignas(32) float tmp[kStrip];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    _mm256_store_ps(tmp, acc[m][0]);
    _mm256_store_ps(tmp + 8, acc[m][1]);
    for (int j = 0; j < nc; ++j) y[m * ldy + j] += tmp[j];
  }
}
#endif

void run_kernel(int64_t kc, const float* x, int64_t ldx, const float* panel, float* y,
                int64_t ldy, int mr, int nc) {
#if defined(__AVX2__) && defined(__FMA__)
  switch (mr) {
    case 6: return kernel_avx2<6>(kc, x, ldx, panel, y, ldy, nc);
    case 5: return kernel_avx2<5>(kc, x, ldx, panel, y, ldy, nc);
    case 4: return kernel_avx2<4>(kc, x, ldx, panel, y, ldy, nc);
    case 3: return kernel_avx2<3>(kc, x, ldx, panel, y, ldy, nc);
    case 2: return kernel_avx2<2>(kc, x, ldx, panel, y, ldy, nc);
    case 1: return kernel_avx2<1>(kc, x, ldx, panel, y, ldy, nc);
  }
#endif
  kernel_generic(kc, x, ldx, panel, y, ldy, mr, nc);
}

struct Scratch {
  std::vector<float> row;    // one dequantized row segment
  std::vector<float> panel;  // kTileK x kTileOut, strips of 16 outputs, k-major inside a strip
};

// Dequantizes rows [o0, o0+nc) x columns [k0, k0+kc) into the panel (zero-padded strips).
void pack_panel(const uint8_t* w, WeightType wt, size_t w_row, int64_t o0, int64_t nc, int64_t k0,
                int64_t kc, Scratch& s) {
  const auto& ti = info(wt);
  const size_t col_bytes = static_cast<size_t>(k0 / ti.block_elems) * ti.block_bytes;
  const int64_t strips = (nc + kStrip - 1) / kStrip;
  if (nc % kStrip) std::fill(s.panel.begin(), s.panel.begin() + strips * kc * kStrip, 0.0f);
  for (int64_t r = 0; r < nc; ++r) {
    dequantize_row(wt, w + static_cast<size_t>(o0 + r) * w_row + col_bytes, s.row.data(), kc);
    float* strip = s.panel.data() + (r / kStrip) * kc * kStrip + (r % kStrip);
    for (int64_t k = 0; k < kc; ++k) strip[k * kStrip] = s.row[k];
  }
}

}  // namespace

void matmul_float(const void* w, WeightType wt, int64_t n_out, int64_t n_in, const float* x,
                  int64_t nt, const float* bias, float* y, ThreadPool& pool) {
  check_matmul_args(wt, n_out, n_in, nt, "matmul_float");
  if (nt == 0) return;
  const auto* wb = static_cast<const uint8_t*>(w);
  const size_t w_row = row_bytes(wt, n_in);
  const int64_t tiles = (n_out + kTileOut - 1) / kTileOut;
  const int64_t grain = n_out * n_in * nt < (1 << 16) ? tiles : 1;
  pool.parallel_for(tiles, grain, [&](int64_t tile0, int64_t tile1, int) {
    static thread_local Scratch s;
    s.row.resize(kTileK);
    s.panel.resize(kTileK * kTileOut);
    for (int64_t tile = tile0; tile < tile1; ++tile) {
      const int64_t o0 = tile * kTileOut, nc = std::min(kTileOut, n_out - o0);
      for (int64_t t = 0; t < nt; ++t) {
        float* yt = y + t * n_out + o0;
        if (bias) std::memcpy(yt, bias + o0, static_cast<size_t>(nc) * sizeof(float));
        else std::fill(yt, yt + nc, 0.0f);
      }
      for (int64_t k0 = 0; k0 < n_in; k0 += kTileK) {
        const int64_t kc = std::min(kTileK, n_in - k0);
        pack_panel(wb, wt, w_row, o0, nc, k0, kc, s);
        for (int64_t t0 = 0; t0 < nt; t0 += kMaxTokens) {
          const int mr = static_cast<int>(std::min<int64_t>(kMaxTokens, nt - t0));
          for (int64_t j0 = 0; j0 < nc; j0 += kStrip)
            run_kernel(kc, x + t0 * n_in + k0, n_in, s.panel.data() + (j0 / kStrip) * kc * kStrip,
                       y + t0 * n_out + o0 + j0, n_out, mr, static_cast<int>(std::min<int64_t>(kStrip, nc - j0)));
        }
      }
    }
  });
}

}  // namespace minfer
