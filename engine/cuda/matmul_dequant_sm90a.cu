// matmul_dequant (matmul_dequant.h): 128 weight rows x 128 tokens per CTA, one CTA per SM, two
// warpgroups of 64 rows each. Per K step of 128 elements (4 weight blocks):
//   * cp.async, kStages - 1 steps ahead: the weight rows' raw blocks (mmq_raw_copy.cuh) into a
//     staging buffer, and the tokens' f16 values straight into the swizzled B tile of that stage
//     (two 128-byte halves of K per token);
//   * one step ahead, the threads dequantize (row, block) units from the raw copies into the A tile
//     (f16, the same layout): round(d * (q - 8)) for Q4_0, round(d * q) for Q8_0, as dequant.cu;
//   * each warpgroup issues 8 wgmma m64n128k16 (f32 accumulators kept across all of K) and runs them
//     while the threads copy and dequantize the next step.
// Accumulator layout (PTX ISA, wgmma D fragments for m64nN; warp w of the warpgroup, g = lane/4,
// q = lane%4): element e = 4j + 2i + c is row 16w + g + 8i, token 8j + 2q + c.
#include "cuda/matmul_dequant.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/mmq_raw_copy.cuh"
#include "cuda/wgmma_sm90a.cuh"

namespace minfer::cuda {
namespace {

using mmq_raw::kRows;
using mmq_raw::kStepBlocks;
using mmq_raw::kToks;
using wgmma::tile_off;

constexpr int kThreads = 256;
constexpr int kAcc = 64;                    // f32 results per thread (m64n128 over 128 threads)
constexpr int kHalfTile = 128 * 128;        // 128 rows x 64 f16 (one 128-byte row each): 16 KB
constexpr int kStages = 3;                  // raw weights + B tiles; 3 fit for both types

template <WeightType T> struct Fmt;
template <> struct Fmt<WeightType::Q4_0> {
  static constexpr int kBlockBytes = 18;
  static constexpr int kRowBytes = 80;      // 72 + 8 (the unpack reads a word past the codes)
};
template <> struct Fmt<WeightType::Q8_0> {
  static constexpr int kBlockBytes = 34;
  static constexpr int kRowBytes = 144;     // 136 + 8
};

template <WeightType T>
struct Smem {
  unsigned char a[2][2][kHalfTile];          // weights as f16 by step parity, K halves
  unsigned char b[kStages][2][kHalfTile];    // tokens as f16 by stage, K halves
  unsigned char w[kStages][kRows * Fmt<T>::kRowBytes];
};

// D += A (64 x 16 f16, K-major) * B (128 x 16 f16, K-major)^T, f32 accumulators (scale-d 1).
__device__ __forceinline__ void wgmma_k16(float (&d)[kAcc], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "
      "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(1)
      : "memory");
}

// ---------------------------------------------------------------- copies

// Tokens tok0.. of K step `step`: 128 tokens x 16 chunks of 16 bytes, chunk k of a token to half
// k / 8 of the B tile at chunk k % 8 (swizzled); zeros past the last token.
__device__ __forceinline__ void issue_x_step(const __half* x, int64_t n_in, int n_toks, unsigned char (*b)[kHalfTile],
                                             uint32_t step, int tid) {
  const uint32_t b0 = static_cast<uint32_t>(__cvta_generic_to_shared(b[0]));
#pragma unroll
  for (int c0 = 0; c0 < kToks * 16; c0 += kThreads) {
    const int c = c0 + tid, tk = c / 16, k = c % 16;
    const bool ok = tk < n_toks;
    const __half* src = x + (ok ? tk : 0) * n_in + step * 128 + 8 * k;
    mmq_raw::cp_async16(b0 + (k / 8) * kHalfTile + tile_off(tk, k % 8), src, ok);
  }
}

// ---------------------------------------------------------------- dequantization

__device__ __forceinline__ unsigned h2_bits(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }
__device__ __forceinline__ __half2 bits_h2(unsigned u) { return *reinterpret_cast<__half2*>(&u); }

// Two codes c0, c1 (as 1024 + c0, 1024 + c1 in the f16 halves of `biased`) to round(d * (c - off)).
__device__ __forceinline__ unsigned dq_pair(unsigned biased, __half2 off, __half2 d) {
  return h2_bits(__hmul2(__hsub2(bits_h2(biased), off), d));  // the subtraction is exact
}

// Raw step `st` into the A tile of parity `p`. Lane l of warp w takes block l / 8 of row
// 8 (2w + h) + l % 8, h = 0, 1 (mmq_wgmma_sm90a.cu's unpack: few bank conflicts on the raw rows,
// none on the swizzled stores). Whether a block's codes start on a word is a byte permute
// selector, not a branch.
template <WeightType T>
__device__ __forceinline__ void dequant_step(Smem<T>& sm, int st, int p, int tid) {
  constexpr int kBB = Fmt<T>::kBlockBytes, kRB = Fmt<T>::kRowBytes;
  const int lane = tid % 32, kb = lane / 8;
  const bool odd = kb & 1;
  const unsigned sel = odd ? 0x3210u : 0x5432u;  // odd block: codes on a word; even: 2 bytes past
  unsigned char* a = sm.a[p][kb / 2];
  const int c0 = (kb % 2) * 4;                   // the block's first 16-byte chunk in its K half
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = 8 * (2 * (tid / 32) + h) + lane % 8;
    const unsigned char* blk = &sm.w[st][r * kRB + kb * kBB];
    const __half2 d = __half2half2(*reinterpret_cast<const __half*>(blk));
    const unsigned* wp = reinterpret_cast<const unsigned*>(blk + 2 - (odd ? 0 : 2));
    // Code word k (bytes 4k..4k+3 of the codes) from two aligned ones.
    const auto word = [&](int k) { return __byte_perm(wp[k], wp[k + 1], sel); };
    if constexpr (T == WeightType::Q4_0) {
      // Byte j holds element j (low nibble) and 16 + j (high). 0x6400 | n is f16 1024 + n.
      const __half2 off = __float2half2_rn(1032.0f);
      uint4 out[4];  // chunks: elements 0-7, 8-15 (low nibbles), 16-23, 24-31 (high)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const unsigned u = word(k), v = u >> 4;
        const unsigned lo01 = (__byte_perm(u, 0, 0x4140) & 0x000F000Fu) | 0x64006400u;
        const unsigned lo23 = (__byte_perm(u, 0, 0x4342) & 0x000F000Fu) | 0x64006400u;
        const unsigned hi01 = (__byte_perm(v, 0, 0x4140) & 0x000F000Fu) | 0x64006400u;
        const unsigned hi23 = (__byte_perm(v, 0, 0x4342) & 0x000F000Fu) | 0x64006400u;
        unsigned* lo = reinterpret_cast<unsigned*>(&out[k / 2]) + 2 * (k % 2);
        unsigned* hi = reinterpret_cast<unsigned*>(&out[2 + k / 2]) + 2 * (k % 2);
        lo[0] = dq_pair(lo01, off, d);
        lo[1] = dq_pair(lo23, off, d);
        hi[0] = dq_pair(hi01, off, d);
        hi[1] = dq_pair(hi23, off, d);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) *reinterpret_cast<uint4*>(&a[tile_off(r, c0 + k)]) = out[k];
    } else {
      // Signed bytes; b ^ 0x80 = b + 128, so 0x6400 | (b ^ 0x80) is f16 1152 + b.
      const __half2 off = __float2half2_rn(1152.0f);
#pragma unroll
      for (int ch = 0; ch < 4; ++ch) {  // chunk ch: elements 8 ch..8 ch+7 (code words 2 ch, 2 ch + 1)
        uint4 out;
        unsigned* o = reinterpret_cast<unsigned*>(&out);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const unsigned u = word(2 * ch + k) ^ 0x80808080u;
          o[2 * k] = dq_pair(__byte_perm(u, 0x64646464u, 0x4140), off, d);
          o[2 * k + 1] = dq_pair(__byte_perm(u, 0x64646464u, 0x4342), off, d);
        }
        *reinterpret_cast<uint4*>(&a[tile_off(r, c0 + ch)]) = out;
      }
    }
  }
}

// ---------------------------------------------------------------- the kernel

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_dequant_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in, const __half* __restrict__ x,
                          int64_t nt, const float* __restrict__ bias, float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int S = kStages;
  extern __shared__ __align__(128) unsigned char matmul_dequant_smem[];
  // The swizzle repeats every 1024 bytes of shared-memory address: align the tiles to it.
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(matmul_dequant_smem));
  Smem<T>& sm = *reinterpret_cast<Smem<T>*>(matmul_dequant_smem + ((1024 - (base & 1023)) & 1023));
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int wr = warp / 4, g = lane / 4, q = lane % 4;
  const int row = 64 * wr + 16 * (warp % 4) + g;  // this thread's first row in the CTA's tile (+8 the second)
  const mmq_raw::Tile ct = mmq_raw::cta_tile<Fmt<T>::kBlockBytes>(w, n_out, n_in, reinterpret_cast<const uint8_t*>(x), nt);  // its Q8_1 view of x is unused
  const __half* xt = x + ct.tok0 * n_in;
  const int n_toks = static_cast<int>(nt - ct.tok0 < kToks ? nt - ct.tok0 : kToks);
  const int64_t steps = ct.steps;
  const auto copy_step = [&](int buf, uint32_t step) {
    mmq_raw::issue_w_step<Fmt<T>::kBlockBytes, Fmt<T>::kRowBytes, kThreads>(ct, sm.w[buf], step, tid);
    issue_x_step(xt, n_in, n_toks, sm.b[buf], step, tid);
  };

#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < steps) copy_step(st, st);
    mmq_raw::cp_async_commit();
  }
  mmq_raw::cp_async_wait<S - 2>();
  __syncthreads();
  dequant_step<T>(sm, 0, 0, tid);

  float acc[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) acc[e] = 0.0f;

  for (int64_t i = 0; i < steps; ++i) {
    mmq_raw::cp_async_wait<S - 2>();  // this thread's copies of step i have landed
    wgmma::fence_proxy_async();       // its copies and dequantized stores, to wgmma's reads
    wgmma::wait<0>();                 // this warpgroup's step i-1 is done with its tiles
    __syncthreads();                  // everyone's: step i's tiles complete, step i-1's buffers free
    const int p = static_cast<int>(i & 1), sb = static_cast<int>(i % S);
    wgmma::fence_regs(acc);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {  // K slices of 16: half kk / 4, 32 bytes into the rows each
      const int off = (kk % 4) * 32;
      wgmma_k16(acc, wgmma::smem_desc(&sm.a[p][kk / 4][wr * 8192 + off]), wgmma::smem_desc(&sm.b[sb][kk / 4][off]));
    }
    wgmma::commit();
    wgmma::fence_regs(acc);
    const int64_t next = i + S - 1;
    if (next < steps) copy_step(static_cast<int>(next % S), static_cast<uint32_t>(next));
    mmq_raw::cp_async_commit();
    if (i + 1 < steps) {
      mmq_raw::cp_async_wait<S - 2>();  // step i+1's raw weights (this thread's copies)
      __syncthreads();                  // everyone's
      dequant_step<T>(sm, static_cast<int>((i + 1) % S), p ^ 1, tid);
    }
  }
  wgmma::wait<0>();
  wgmma::fence_regs(acc);
  mmq_raw::cp_async_wait<0>();  // no copy outlives the kernel (the trailing groups are empty)

  wgmma::store_d(acc, ct.row0 + row, ct.tok0 + 2 * q, n_out, nt, bias, y);
#else
  __trap();  // built for sm_90a only; matmul_dequant_applies keeps other devices away
#endif
}

template <WeightType T>
void launch(const void* w, int64_t n_out, int64_t n_in, const __half* x, int64_t nt, const float* bias, float* y,
            cudaStream_t s, const char* kernel) {
  constexpr size_t kSmem = sizeof(Smem<T>) + 1024;  // + the alignment of the tiles
  static_assert(kSmem <= 227 * 1024, "one CTA per SM");
  static const bool opted_in = wgmma::allow_smem(reinterpret_cast<const void*>(matmul_dequant_kernel<T>), kSmem);
  (void)opted_in;
  matmul_dequant_kernel<T><<<mmq_raw::tile_grid(n_out, nt, kernel), kThreads, kSmem, s>>>(
      static_cast<const uint8_t*>(w), n_out, n_in, x, nt, bias, y);
  check_launch(kernel, s);
}

}  // namespace

bool matmul_dequant_applies(WeightType t, int64_t n_in, const void* w) {
  return mmq_raw::tile_applies(t, n_in, w, nullptr) && device_is_sm90();  // x: checked by matmul_dequant
}

void matmul_dequant(WeightType t, const void* w, int64_t n_out, int64_t n_in, const __half* x, int64_t nt,
                    const float* bias, float* y, cudaStream_t s) {
  if (!matmul_dequant_applies(t, n_in, w))
    fail("matmul_dequant: ", name(t), " x ", n_in, " does not apply (Q4_0 or Q8_0, n_in a multiple of 128, sm_90)");
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0) fail("matmul_dequant: x is not 16-byte aligned");
  if (n_out <= 0 || nt <= 0) fail("matmul_dequant: empty shape ", nt, " x ", n_in, " . ", n_out);
  if (t == WeightType::Q4_0)
    launch<WeightType::Q4_0>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q4_0>");
  else
    launch<WeightType::Q8_0>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q8_0>");
}

}  // namespace minfer::cuda
