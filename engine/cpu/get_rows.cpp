#include "core/error.h"
#include "cpu/ops.h"
#include "quant/quant.h"

namespace minfer::cpu {

void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= w.rows)
      fail("token id ", ids[i], " is outside the vocabulary of ", w.rows, " rows of '", w.name, "'");
    dequantize_row(w.type, w.data + static_cast<size_t>(ids[i]) * w.row_bytes, y + i * w.cols, w.cols);
  }
}

void weight_to_f32(const WeightView& w, float* y) {
  dequantize_row(w.type, w.data, y, w.rows * w.cols);
}

}  // namespace minfer::cpu
