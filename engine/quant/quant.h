// Reference (de)quantization for every WeightType with the standard GGUF block layouts, and the
// dot products of a quantized weight row with a quantized activation row (the MMQ inner loop).
#pragma once
#include <cstdint>

#include "core/weight_type.h"

namespace minfer {

// dst[0..n) = values of the n elements stored at src. n a multiple of the block size.
void dequantize_row(WeightType t, const void* src, float* dst, int64_t n);
// Reference quantization of n floats into dst (row_bytes(t, n) bytes).
void quantize_row(WeightType t, const float* src, void* dst, int64_t n);

// The activation format a weight type's dot product takes: Q8_0 (Q4_0, Q5_0, Q8_0),
// Q8_1 (Q4_1, Q5_1), Q8_K (K-quants), F32 for float weights (F32, F16, BF16).
WeightType vec_dot_type(WeightType weight);
// dot(w_row, act_row) over n elements; act_row is stored in vec_dot_type(weight).
float vec_dot(WeightType weight, int64_t n, const void* w_row, const void* act_row);

}  // namespace minfer
