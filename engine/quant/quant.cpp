// Dispatch of quant.h's entry points to the per-type kernels, with argument checks.
#include "quant/quant.h"

#include "core/error.h"
#include "quant/quant_impl.h"
#include "quant/vec_dot_paths.h"

namespace minfer {
namespace {

using DequantFn = void (*)(const void*, float*, int64_t);
using QuantFn = void (*)(const float*, void*, int64_t);

struct Kernels {
  DequantFn dequant;
  QuantFn quant;
  qimpl::VecDotFn dot_scalar;  // nullptr for activation-only types
  qimpl::VecDotFn dot_simd;    // nullptr when this build has no SIMD path for the type
};

Kernels kernels(WeightType t) {
  using namespace qimpl;
  const SimdDots& s = simd_dots();
  switch (t) {
    case WeightType::F32: return {dequantize_f32, quantize_f32, scalar::dot_f32, s.f32};
    case WeightType::F16: return {dequantize_f16, quantize_f16, scalar::dot_f16, s.f16};
    case WeightType::BF16: return {dequantize_bf16, quantize_bf16, scalar::dot_bf16, s.bf16};
    case WeightType::Q4_0: return {dequantize_q4_0, quantize_q4_0, scalar::dot_q4_0, s.q4_0};
    case WeightType::Q4_1: return {dequantize_q4_1, quantize_q4_1, scalar::dot_q4_1, s.q4_1};
    case WeightType::Q5_0: return {dequantize_q5_0, quantize_q5_0, scalar::dot_q5_0, s.q5_0};
    case WeightType::Q5_1: return {dequantize_q5_1, quantize_q5_1, scalar::dot_q5_1, s.q5_1};
    case WeightType::Q8_0: return {dequantize_q8_0, quantize_q8_0, scalar::dot_q8_0, s.q8_0};
    case WeightType::Q8_1: return {dequantize_q8_1, quantize_q8_1, nullptr, nullptr};
    case WeightType::Q4_K: return {dequantize_q4_k, quantize_q4_k, scalar::dot_q4_k, s.q4_k};
    case WeightType::Q5_K: return {dequantize_q5_k, quantize_q5_k, scalar::dot_q5_k, s.q5_k};
    case WeightType::Q6_K: return {dequantize_q6_k, quantize_q6_k, scalar::dot_q6_k, s.q6_k};
    case WeightType::Q8_K: return {dequantize_q8_k, quantize_q8_k, nullptr, nullptr};
  }
  fail("unknown weight type id ", static_cast<uint32_t>(t));
}

void check_length(WeightType t, int64_t n, const char* what) {
  const int be = info(t).block_elems;
  if (n < 0 || n % be != 0)
    fail(what, ": row of ", n, " elements is not a multiple of ", name(t), "'s block size ", be);
}

qimpl::VecDotFn dot_kernel(DotPath path, WeightType weight) {
  const Kernels k = kernels(weight);
  if (!k.dot_scalar) fail("vec_dot: ", name(weight), " is an activation format, not a weight type");
  if (path == DotPath::Scalar) return k.dot_scalar;
  if (!k.dot_simd) fail("vec_dot: no SIMD path for ", name(weight), " in this build");
  return k.dot_simd;
}

}  // namespace

void dequantize_row(WeightType t, const void* src, float* dst, int64_t n) {
  check_length(t, n, "dequantize_row");
  kernels(t).dequant(src, dst, n);
}

void quantize_row(WeightType t, const float* src, void* dst, int64_t n) {
  check_length(t, n, "quantize_row");
  kernels(t).quant(src, dst, n);
}

WeightType vec_dot_type(WeightType weight) {
  switch (weight) {
    case WeightType::F32:
    case WeightType::F16:
    case WeightType::BF16: return WeightType::F32;
    case WeightType::Q4_0:
    case WeightType::Q5_0:
    case WeightType::Q8_0: return WeightType::Q8_0;
    case WeightType::Q4_1:
    case WeightType::Q5_1: return WeightType::Q8_1;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K: return WeightType::Q8_K;
    default: fail("vec_dot_type: ", name(weight), " is an activation format, not a weight type");
  }
}

float vec_dot(WeightType weight, int64_t n, const void* w_row, const void* act_row) {
  check_length(weight, n, "vec_dot");
  const Kernels k = kernels(weight);
  if (k.dot_simd) return k.dot_simd(n, w_row, act_row);
  if (!k.dot_scalar) fail("vec_dot: ", name(weight), " is an activation format, not a weight type");
  return k.dot_scalar(n, w_row, act_row);
}

VecDotFn vec_dot_fn(WeightType weight) {
  const Kernels k = kernels(weight);
  return k.dot_simd ? k.dot_simd : dot_kernel(DotPath::Scalar, weight);
}

VecDot4Fn vec_dot4_fn(WeightType weight) { return qimpl::simd_dot4(weight); }

bool has_simd_vec_dot(WeightType weight) { return kernels(weight).dot_simd != nullptr; }

float vec_dot_path(DotPath path, WeightType weight, int64_t n, const void* w_row, const void* act_row) {
  check_length(weight, n, "vec_dot");
  return dot_kernel(path, weight)(n, w_row, act_row);
}

}  // namespace minfer
