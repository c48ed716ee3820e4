// What a paired trace measures per node, over FULL tensors (docs/trace-format.md, NodeRecord
// `cmp`, `outliers`, `act_scales`): a tensor against its reference, the largest |x|, and the
// block scales an 8-bit activation quantization uses. Plain host loops in double; NodeOutput's
// default methods run them on to_host() copies, a device backend computes them in place (cuda:
// engine/probes/cuda/tensor_compare.h, engine/probes/cuda/summarize.h).
#pragma once
#include <cstdint>
#include <vector>

namespace minfer {

// SQNR is capped to [-200, 200] dB: 200 = identical, -200 = a non-finite value on one side only
// (or a reference that is all zeros against a non-zero tensor).
inline constexpr double kSqnrCapDb = 200;

// An element is "beyond" the tolerance when |a - b| > abs + rel * |b| (b the reference).
struct CompareTolerance {
  double abs = 1e-3;
  double rel = 1e-2;
};

struct TensorCompare {
  double cosine = 1;             // <a, b> / (|a| |b|); 1 when both are 0, 0 when one is
  double sqnr_db = kSqnrCapDb;   // 10 log10(sum b^2 / sum (a-b)^2), capped
  double max_abs_diff = 0;       // largest |a - b| over the pairs where both are finite
  int64_t max_abs_at = -1;       // its flat index (lowest on ties); -1 when no pair is finite
  double rel_l2 = 0;             // |a - b| / |b| (Inf when b is 0 and a is not)
  int64_t n_beyond = 0;          // elements beyond the tolerance, plus non-finite mismatches
  int64_t nonfinite_mismatch = 0;  // a non-finite on one side only, or NaN against Inf
  bool identical() const { return max_abs_diff == 0 && nonfinite_mismatch == 0; }
};

// a: the tensor, b: its reference, n elements each. Pairs where both are the same non-finite
// value (NaN and NaN, +Inf and +Inf) count as equal and take no part in the sums.
TensorCompare compare_host(const float* a, const float* b, int64_t n, const CompareTolerance& tol);

// What compare_host gathers in one pass before its final formulas (compare_from_sums): the sums
// in double over the pairs where both are finite, the largest |a - b| and its lowest index, the
// counts. The device twin (engine/probes/cuda/tensor_compare.h) reduces the same fields in another
// order and finishes with the same function, so both sides share every rule but the summation
// order. Plain fields: the struct is also a CUDA reduction's value.
struct CompareSums {
  double saa = 0, sbb = 0, sab = 0, see = 0;  // sum a^2, b^2, ab, (a-b)^2
  double max_abs = 0;                         // largest |a - b|, at max_at
  int64_t max_at = -1;                        // -1: no finite pair yet
  int64_t n_beyond = 0;                       // finite pairs beyond the tolerance
  int64_t nonfinite = 0;                      // non-finite mismatches
};
TensorCompare compare_from_sums(const CompareSums& s);

struct Outlier {
  int64_t index = 0;   // flat (row-major) index
  float value = 0;
  float ref_value = 0;  // the reference at that index (paired traces)
};

// The k elements of largest |x| (Inf counts as largest, NaN is skipped), by |x| descending,
// ties by lower index. ref (nullable, n elements) fills ref_value.
std::vector<Outlier> outliers_host(const float* x, int64_t n, int k, const float* ref);

// Summary of the per-block scales d = amax(block) / 127 of an 8-bit quantization of x
// (rows x cols, row-major) in blocks of `block` elements along each row (a shorter last block
// when block does not divide cols). Non-finite values do not count towards amax.
struct BlockScales {
  double min = 0, max = 0, mean = 0;
  int64_t blocks = 0;
  int block_size = 0;
};
BlockScales block_scales_host(const float* x, int64_t rows, int64_t cols, int block);

}  // namespace minfer
