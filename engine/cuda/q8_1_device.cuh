// Device-side Q8_1 quantization of one 32-value block by 8 lanes, shared by quantize_q8_1_kernel
// (quantize.cu: activations to global memory) and the fused decode matvecs (mmvq_fused.cu:
// activations to shared memory), so both produce the same bytes. The arithmetic is quant/'s
// quantize_q8_1, bit for bit: per 32 consecutive values
//   amax = max |x|, d = amax / 127 (IEEE division), id = d ? 1/d : 0,
//   q = round-to-nearest-even(clamp(x * id, -127, 127))   (CPU: round_clamp; GPU: __float2int_rn)
//   stored d = f16(d), s = f16(f32(stored d) * sum(q)).
// Every step is one IEEE operation, so no FMA contraction can change a result.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

namespace minfer::cuda::qb {

// One lane's share of a Q8_1 block: its 4 codes packed little-endian (value 4*sub+i in byte i)
// and the block's (d, s) halves, the same in all 8 lanes of the block.
struct Q8_1Quad {
  uint32_t packed;
  __half2 ds;  // d then s: the first 4 bytes of BlockQ8_1
};

// Lanes 8k..8k+7 of a warp hold values [4*sub, 4*sub+4) (sub = lane % 8) of one block in v.
// All 32 lanes of the warp must call it together (full-mask xor-shuffles of width 8); a group
// of 8 lanes with no block (past the end of the data) passes zeros and stores nothing.
__device__ __forceinline__ Q8_1Quad quantize_q8_1_quad(float4 v) {
  float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  auto code = [id](float f) {
    float r = f * id;
    if (!(r >= -127.0f)) r = -127.0f;  // clamp first, NaN -> -127, as round_clamp
    if (r > 127.0f) r = 127.0f;
    return __float2int_rn(r);
  };
  const int q0 = code(v.x), q1 = code(v.y), q2 = code(v.z), q3 = code(v.w);
  int sum = q0 + q1 + q2 + q3;
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  Q8_1Quad r;
  r.packed = (static_cast<uint32_t>(q0) & 0xFF) | ((static_cast<uint32_t>(q1) & 0xFF) << 8) |
             ((static_cast<uint32_t>(q2) & 0xFF) << 16) | ((static_cast<uint32_t>(q3) & 0xFF) << 24);
  const __half dh = __float2half_rn(d);
  const __half sh = __float2half_rn(__half2float(dh) * static_cast<float>(sum));
  r.ds = __halves2half2(dh, sh);
  return r;
}

// Stores lane `sub`'s share into block `blk` (global or shared memory, 4-byte aligned): the 4
// codes at qs[4*sub..], and (d, s) from lane 0 of the group.
template <class Block>
__device__ __forceinline__ void store_q8_1_quad(Block* blk, int sub, const Q8_1Quad& q) {
  reinterpret_cast<uint32_t*>(blk->qs)[sub] = q.packed;
  if (sub == 0) *reinterpret_cast<__half2*>(blk) = q.ds;  // d then s, 4-byte aligned
}

}  // namespace minfer::cuda::qb
